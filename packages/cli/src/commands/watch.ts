import { createRegistry, shutdownOnSignals, type LeaderInfo, type LeaseEvent, type LeaseInfo, type Member, type Registry } from '@rollcall/core';
import { resolveCliConfig, type ConfigFlags } from '../config.js';
import { ExitCode } from '../errors.js';
import { metricsHost, metricsPort, serveRegistryMetrics, type MetricsFlags } from '../metrics.js';
import { compactJson, outputFormat, shortIncarnation } from '../output.js';
import { leaseStale, memberStale, staleMark } from '../stale.js';
import { printable, printableJson } from '../terminal.js';

export interface WatchFlags extends ConfigFlags, MetricsFlags {
  output?: string;
  json?: boolean;
}

/**
 * `stale`: the member, leader or holder shown has not renewed within its lease
 * by this machine's clock, as `members`, `leader` and `locks` mark it (see
 * `stale.ts`): seen on the first screen, before this watch has watched a lease
 * long enough to judge it expired itself (which it reports a lease later).
 */
type Staleness = { stale?: true; renewTime?: string | null; leaseDurationMs?: number };
type Event = ({ kind: 'member'; type: 'added' | 'updated' | 'removed'; role: string; id: string; incarnation: string; payload: unknown; reason?: string; unverified?: true } & Staleness)
  | ({ kind: 'election'; type: 'leader' | 'no-leader'; election: string; leader: string | null; fencingToken: number | null; previous?: string | null } & Staleness)
  | ({ kind: 'lock'; type: 'acquired' | 'released' | 'expired' | 'deleted'; lock: string; holder: string | null; fencingToken: number | null } & Staleness)
  | { kind: 'connection'; type: string };

/** The fields of a STALE entry, none for a fresh one. */
function staleness(stale: boolean, renewTime: Date | undefined, leaseDurationMs: number): Staleness {
  return stale ? { stale: true, renewTime: renewTime?.toISOString() ?? null, leaseDurationMs } : {};
}

function staleText(e: Staleness): string {
  return e.stale ? `  ${staleMark(e.renewTime ? new Date(e.renewTime) : undefined, e.leaseDurationMs ?? 0)}` : '';
}

function text(e: Event): string {
  switch (e.kind) {
    case 'member':
      return `member    ${e.type.padEnd(8)} ${e.role}/${e.id}  incarnation ${shortIncarnation(e.incarnation)}  ${compactJson(e.payload)}${e.reason ? `  (${e.reason})` : ''}${e.unverified ? '  (UNVERIFIED: its pod readiness cannot be read here; shown while its record exists)' : ''}${staleText(e)}`;
    case 'election':
      return e.type === 'leader' ? `election  leader   ${e.election}  ${e.leader}  fencing token ${e.fencingToken}${staleText(e)}` : `election  none     ${e.election}  no leader${e.previous ? ` (was ${e.previous})` : ''}`;
    case 'lock':
      return `lock      ${e.type.padEnd(8)} ${e.lock}  ${e.holder ?? '(none)'}  fencing token ${e.fencingToken}${staleText(e)}`;
    case 'connection':
      return `connection ${e.type}`;
  }
}

const memberEvent = (type: 'added' | 'updated' | 'removed', m: Member, reason?: string): Event => ({ kind: 'member', type, role: m.role, id: m.id, incarnation: m.incarnation, payload: m.payload ?? null, ...(reason ? { reason } : {}), ...(type !== 'removed' && m.judgedBy === 'unverified' ? { unverified: true as const } : {}), ...staleness(type !== 'removed' && memberStale(m), m.renewTime, m.leaseDurationMs) });
const leaderEvent = (lease: LeaseInfo, previous?: LeaderInfo): Event => {
  const { name: election, holder: leader } = lease;
  return leader
    ? { kind: 'election', type: 'leader', election, leader: leader.identity, fencingToken: leader.fencingToken, ...staleness(leaseStale(lease), lease.renewTime, lease.leaseDurationMs) }
    : { kind: 'election', type: 'no-leader', election, leader: null, fencingToken: null, previous: previous?.identity ?? null };
};

/** A lock's change as the command prints it; a renewal or a repeat of "no holder" prints nothing. */
function lockEvent(e: LeaseEvent): Event | undefined {
  const { name, holder, fencingToken } = e.lease;
  if (e.type === 'removed') return { kind: 'lock', type: 'deleted', lock: name, holder: null, fencingToken };
  if (holder) return { kind: 'lock', type: 'acquired', lock: name, holder: holder.identity, fencingToken, ...staleness(leaseStale(e.lease), e.lease.renewTime, e.lease.leaseDurationMs) };
  if (e.type !== 'changed') return undefined;
  return e.reason === 'expired' ? { kind: 'lock', type: 'expired', lock: name, holder: e.previous.holder?.identity ?? null, fencingToken } : { kind: 'lock', type: 'released', lock: name, holder: null, fencingToken };
}

/** An election's change as the command prints it: its leader, or none (with the one it had); a free election's record deleted prints nothing. */
function electionEvent(e: LeaseEvent): Event | undefined {
  if (e.type === 'removed') return e.lease.holder ? leaderEvent({ ...e.lease, holder: undefined }, e.lease.holder) : undefined;
  return leaderEvent(e.lease, e.type === 'changed' ? e.previous.holder : undefined);
}

/**
 * `rollcall watch`: the current members, leaders and locks, then every change,
 * until Ctrl-C, all from the Registry API and its one watch cache, so expiry is
 * judged as the library judges it.
 */
export async function watchCommand(flags: WatchFlags): Promise<number> {
  const format = outputFormat(flags);
  const port = metricsPort(flags);
  const config = await resolveCliConfig(flags, process.env, {}, 'read');
  const registry: Registry = await createRegistry(config.source);
  // A cluster-wide exporter: every role (the default) and every election.
  const stopMetrics = port === undefined ? async () => {} : await serveRegistryMetrics(registry, port, { elections: 'all' }, metricsHost(flags)).catch(async (err: unknown) => {
    await registry.close();
    throw err;
  });
  const emit = (e: Event) => {
    if (format === 'json') process.stdout.write(printableJson({ time: new Date().toISOString(), ...e }) + '\n');
    else process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${printable(text(e))}\n`);
  };
  const emitIf = (e: Event | undefined) => e && emit(e);
  // Member events that come while the first screen is listed wait for the listing, in order: a member's
  // liveness (a reaper-mode member's heartbeat record) is read by then, so its STALE mark is the listings'.
  let starting: { type: 'added' | 'updated' | 'removed'; member: Member; reason?: string }[] | undefined = [];
  const onMember = (type: 'added' | 'updated' | 'removed', member: Member, reason?: string) => (starting ? starting.push({ type, member, reason }) : emit(memberEvent(type, member, reason)));
  registry.on('memberAdded', ({ member }) => onMember('added', member));
  registry.on('memberUpdated', ({ member }) => onMember('updated', member));
  registry.on('memberRemoved', ({ member, reason }) => onMember('removed', member, reason));
  for (const type of ['suspended', 'lost', 'reconnected'] as const) registry.on(type, () => emit({ kind: 'connection', type }));

  const listed = new Map<string, Member>();
  for (const role of await registry.roles()) for (const m of await registry.members(role)) listed.set(`${m.role}/${m.id}/${m.incarnation}`, m);
  const shown = new Set<string>();
  for (const { type, member, reason } of starting) {
    const key = `${member.role}/${member.id}/${member.incarnation}`;
    if (type === 'added') shown.add(key);
    const heard = listed.get(key)?.renewTime;
    emit(memberEvent(type, type === 'removed' || heard === undefined ? member : { ...member, renewTime: heard }, reason));
  }
  starting = undefined;
  // A member listed whose event came before this watched has not been shown yet.
  for (const [key, m] of listed) if (!shown.has(key)) emit(memberEvent('added', m));
  // Listed first, so the watches below replay every election and lock at once, before `watching` is announced.
  await Promise.all([registry.elections(), registry.locks()]);
  const elections = registry.watchElections((e) => emitIf(electionEvent(e)));
  const locks = registry.watchLocks((e) => emitIf(lockEvent(e)));

  // Ctrl-C or SIGTERM: the one bounded shutdown every Rollcall process uses; the exit code is the signal's (130, 143).
  const shutdown = shutdownOnSignals(
    {
      close: async () => {
        elections.close();
        locks.close();
        await stopMetrics();
        await registry.close();
      },
    },
    { exit: false },
  );
  return new Promise<number>((resolve) => {
    void shutdown.done.then((r) => {
      shutdown.dispose();
      resolve(r.exitCode);
    });
    // Announced only once Ctrl-C is handled: a reader (a script, a test) may send it as soon as it reads this.
    process.stderr.write(`rollcall: watching cluster ${config.resolved.cluster} on ${registry.backend}; Ctrl-C to stop\n`);
  });
}
