/**
 * The etcd backend's benchmark against the test environment's etcd:
 * graceful handover and crash failover (p50/p99 over many rounds), the delay
 * from announce() to another process's `added` event, and lock operations per
 * second among 10 contenders. Prints numbers; asserts nothing.
 *
 *   npm run bench -w @rollcall/etcd            (ROUNDS=50 LOCK_SECONDS=15 by default)
 */
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { createRegistry, type Leadership, type Registry } from '@rollcall/core';
import { readTestEnv, TcpProxy, up } from '@rollcall/tools/testenv';

const ROUNDS = Number(process.env.ROUNDS ?? 50);
const ANNOUNCES = Number(process.env.ANNOUNCES ?? 200);
const LOCK_SECONDS = Number(process.env.LOCK_SECONDS ?? 15);
const CONTENDERS = 10;
const ELECTION = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };

await up(['etcd']);
const endpoints = readTestEnv().etcd!.endpoints;
const cluster = `bench-${randomBytes(3).toString('hex')}`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function report(name: string, samples: number[]): void {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  console.log(`${name.padEnd(34)} n=${String(s.length).padEnd(4)} p50=${percentile(s, 50).toFixed(1)} ms  p99=${percentile(s, 99).toFixed(1)} ms  mean=${mean.toFixed(1)} ms  max=${s[s.length - 1]!.toFixed(1)} ms`);
}

async function registry(identity: string, etcdEndpoints = endpoints): Promise<Registry> {
  return createRegistry({ type: 'etcd', cluster, identity, election: ELECTION, lock: ELECTION, requestTimeoutMs: 1000, etcd: { endpoints: etcdEndpoints } });
}

function nextElected(leadership: Leadership): Promise<number> {
  return new Promise((resolve) => {
    const off = leadership.on('elected', () => {
      off();
      resolve(performance.now());
    });
  });
}

/** resign() on the leader to `elected` on the follower, which learns it through the watch. */
async function gracefulHandover(): Promise<number[]> {
  const a = await registry('handover-a');
  const b = await registry('handover-b');
  const election = `handover-${randomBytes(3).toString('hex')}`;
  let leader = a.campaign(election);
  await leader.whenElected();
  let follower = b.campaign(election);
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const elected = nextElected(follower);
    const start = performance.now();
    await leader.resign();
    samples.push((await elected) - start);
    // The old leader campaigns again and becomes the follower.
    const registryOfOld = leader.identity === 'handover-a' ? a : b;
    [leader, follower] = [follower, registryOfOld.campaign(election)];
  }
  await Promise.all([a.close(), b.close()]);
  return samples;
}

/**
 * The leader's connection is cut at the TCP level and the leader abandoned:
 * to etcd and to the follower that is what a SIGKILL looks like. Measured from
 * the cut to `elected` on the follower; bounded below by the lease duration.
 */
async function crashFailover(): Promise<number[]> {
  const survivor = await registry('failover-survivor');
  const samples: number[] = [];
  const closing: Promise<unknown>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const election = `failover-${i}-${randomBytes(3).toString('hex')}`;
    const proxy = await TcpProxy.start(endpoints[0]!);
    const victim = await registry(`failover-victim-${i}`, [`http://${proxy.address}`]);
    await victim.campaign(election).whenElected();
    const candidacy = survivor.campaign(election);
    const elected = nextElected(candidacy);
    const start = performance.now();
    proxy.cut('reset');
    samples.push((await elected) - start);
    await candidacy.resign();
    // The abandoned victim's close cannot reach etcd; let it time out in the background.
    closing.push(victim.close().catch(() => {}).then(() => proxy.close()));
  }
  await Promise.all(closing);
  await survivor.close();
  return samples;
}

/** announce() on one registry to `added` on another. */
async function announceToAdded(): Promise<number[]> {
  const a = await registry('announcer');
  const b = await registry('watcher');
  const role = `bench-${randomBytes(3).toString('hex')}`;
  const pending = new Map<string, (at: number) => void>();
  b.watchMembers(role, (e) => {
    if (e.type === 'added') pending.get(e.member.id)?.(performance.now());
  });
  const samples: number[] = [];
  for (let i = 0; i < ANNOUNCES; i++) {
    const id = `m${i}`;
    const seen = new Promise<number>((resolve) => pending.set(id, resolve));
    const start = performance.now();
    const member = await a.announce({ role, id, payload: { i } });
    samples.push((await seen) - start);
    await member.withdraw();
  }
  await Promise.all([a.close(), b.close()]);
  return samples;
}

/** 10 registries each lock, release, lock again as fast as they can. */
async function lockThroughput(): Promise<{ opsPerSecond: number; acquire: number[]; handover: number[] }> {
  const registries = await Promise.all(Array.from({ length: CONTENDERS }, (_, i) => registry(`contender-${i}`)));
  const name = `bench-${randomBytes(3).toString('hex')}`;
  const acquire: number[] = [];
  const handover: number[] = [];
  let lastRelease = 0;
  let ops = 0;
  const until = performance.now() + LOCK_SECONDS * 1000;
  const start = performance.now();
  await Promise.all(
    registries.map(async (r) => {
      while (performance.now() < until) {
        const asked = performance.now();
        const lock = await r.lock(name, { timeoutMs: 30_000 });
        const got = performance.now();
        acquire.push(got - asked);
        if (lastRelease) handover.push(got - lastRelease);
        ops++;
        lastRelease = performance.now();
        await lock.release();
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  await Promise.all(registries.map((r) => r.close()));
  return { opsPerSecond: ops / elapsed, acquire, handover };
}

console.log(`etcd ${readTestEnv().etcd!.version} at ${endpoints.join(', ')}; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString()}`);
console.log(`elections and locks: lease ${ELECTION.leaseDurationMs} ms, renew deadline ${ELECTION.renewDeadlineMs} ms, retry ${ELECTION.retryPeriodMs} ms`);
report('graceful handover (resign→elected)', await gracefulHandover());
report('crash failover (cut→elected)', await crashFailover());
report('announce → added on a peer', await announceToAdded());
const locks = await lockThroughput();
console.log(`lock among ${CONTENDERS} contenders             ${locks.opsPerSecond.toFixed(1)} acquire+release/s over ${LOCK_SECONDS} s`);
report('  lock() wait per contender', locks.acquire);
report('  release → next holder', locks.handover);
process.exit(0);
