import { waitFor } from '@rollcall/conformance';
import { stopUnits } from '../../process/unit.js';
import { serverWait } from '../../process/server-wait.js';
import { TestenvError } from '../../env/errors.js';
import { ensembleMembers, zookeeperEnsemble, type ZookeeperEnsembleMember } from '../zookeeper.js';
import { zookeeperMode } from './four-letter-word.js';

/** The ensemble member that currently leads, or undefined when none does (e.g. mid-election). */
export async function zookeeperEnsembleLeader(): Promise<ZookeeperEnsembleMember | undefined> {
  const modes = await Promise.all(
    ensembleMembers().map(async (m) => ({ member: m, mode: await zookeeperMode(m.host, m.clientPort).catch(() => undefined) })),
  );
  return modes.find((m) => m.mode === 'leader')?.member;
}

/** Waits (bounded) until some member other than `excludingId` leads, and returns it. */
export async function waitForZookeeperEnsembleLeader(options: { excludingId?: number; timeoutMs?: number } = {}): Promise<ZookeeperEnsembleMember> {
  let leader: ZookeeperEnsembleMember | undefined;
  await waitFor(
    async () => {
      leader = await zookeeperEnsembleLeader();
      return leader !== undefined && leader.id !== options.excludingId;
    },
    options.timeoutMs ?? 30_000,
    serverWait({ what: 'a ZooKeeper ensemble leader', intervalMs: 200 }),
  );
  return leader!;
}

/**
 * Kills the current ensemble leader with SIGKILL (a crash, not a clean shutdown) and
 * returns it; the other two members then elect a new leader. Restart it with
 * `startServer(member.unit)`.
 */
export async function killZookeeperEnsembleLeader(): Promise<ZookeeperEnsembleMember> {
  const leader = await zookeeperEnsembleLeader();
  if (!leader) throw new TestenvError('no ZooKeeper ensemble member leads right now (is zookeeper-ensemble up?)');
  await stopUnits(zookeeperEnsemble.units().filter((u) => u.name === leader.unit), { signal: 'SIGKILL' });
  return leader;
}
