/**
 * Benchmark on the standalone ZooKeeper server of the test environment
 * (`npm run testenv -- up zookeeper` first). Prints, for election timings of
 * lease 2 s / renew deadline 1.5 s / retry 0.3 s:
 *   - graceful handover: resign() until the other candidate's elected event
 *   - crash failover: SIGKILL of the leader's process until the survivor's elected event
 *   - event delay: announce() until a peer's added event
 *   - lock throughput: acquire+release per second among 10 contenders (10 sessions)
 * Rounds: BENCH_ROUNDS (default 50), BENCH_ANNOUNCES (200), BENCH_LOCK_SECONDS (10).
 */
import { randomBytes } from 'node:crypto';
import { createRegistry, type Registry } from '@rollcall/core';
import { CrashClient } from '@rollcall/conformance';
import { requireTestEnv } from '@rollcall/tools/testenv';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 50);
const ANNOUNCES = Number(process.env.BENCH_ANNOUNCES ?? 200);
const LOCK_SECONDS = Number(process.env.BENCH_LOCK_SECONDS ?? 10);
const connectString = requireTestEnv('zookeeper').connectString;
const cluster = `bench-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;
const timing = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };
const base = { cluster, election: timing, lock: timing, member: { heartbeatIntervalMs: 1000, leaseDurationMs: 4000 }, requestTimeoutMs: 2000 };
const zookeeper = { connectString, sessionTimeoutMs: 4000 };

const open = (identity: string): Promise<Registry> => createRegistry({ ...base, identity, type: 'zookeeper', zookeeper });

function stats(name: string, samples: number[], unit = 'ms'): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  const f = (v: number) => v.toFixed(1).padStart(8);
  console.log(`${name.padEnd(40)} n=${String(sorted.length).padStart(4)}  p50 ${f(at(0.5))} ${unit}  p99 ${f(at(0.99))} ${unit}  min ${f(sorted[0]!)}  max ${f(sorted.at(-1)!)}`);
}

function elected(registry: Registry, election: string): Promise<number> {
  return new Promise((resolve) => {
    const off = registry.on('elected', (e) => {
      if (e.election !== election) return;
      off();
      resolve(performance.now());
    });
  });
}

async function gracefulHandover(): Promise<number[]> {
  const a = await open('a');
  const b = await open('b');
  const samples: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const election = `handover-${i}`;
      const leaderA = a.campaign(election);
      await leaderA.whenElected();
      const bElected = elected(b, election);
      const leaderB = b.campaign(election);
      // Let b settle as a follower (its first attempt has seen a's live lease) before a resigns.
      await new Promise((r) => setTimeout(r, 50));
      const sent = performance.now();
      await leaderA.resign();
      samples.push((await bElected) - sent);
      await leaderB.resign();
    }
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  return samples;
}

async function crashFailover(): Promise<number[]> {
  const survivor = await open('survivor');
  const samples: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const election = `crash-${i}`;
      const child = await CrashClient.start({ kind: 'config', config: (c) => ({ ...c, type: 'zookeeper', zookeeper }) }, { ...base, identity: `child-${i}` }, 20_000);
      await child.command({ op: 'campaign', election }, 10_000);
      await child.event('elected', 10_000, (e) => e.election === election);
      const taken = elected(survivor, election);
      const leadership = survivor.campaign(election);
      await new Promise((r) => setTimeout(r, 2 * timing.retryPeriodMs));
      const killedAt = await child.kill();
      samples.push((await taken) - killedAt);
      await leadership.resign();
    }
  } finally {
    await survivor.close();
  }
  return samples;
}

async function announceDelay(): Promise<number[]> {
  const watcher = await open('watcher');
  const announcer = await open('announcer');
  const samples: number[] = [];
  const arrivals = new Map<string, (at: number) => void>();
  watcher.watchMembers('svc', (e) => e.type === 'added' && arrivals.get(e.member.id)?.(performance.now()));
  try {
    for (let i = 0; i < ANNOUNCES; i++) {
      const id = `m-${i}`;
      const arrived = new Promise<number>((resolve) => arrivals.set(id, resolve));
      const sent = performance.now();
      const handle = await announcer.announce({ role: 'svc', id, payload: { i } });
      samples.push((await arrived) - sent);
      arrivals.delete(id);
      await handle.withdraw();
    }
  } finally {
    await Promise.all([watcher.close(), announcer.close()]);
  }
  return samples;
}

async function lockThroughput(): Promise<{ opsPerSecond: number; total: number; perContender: number[]; waits: number[] }> {
  const contenders = await Promise.all(Array.from({ length: 10 }, (_, i) => open(`c${i}`)));
  const counts = contenders.map(() => 0);
  const waits: number[] = [];
  const started = performance.now();
  const until = started + LOCK_SECONDS * 1000;
  try {
    await Promise.all(
      contenders.map(async (r, i) => {
        while (performance.now() < until) {
          const asked = performance.now();
          const lock = await r.lock('bench', { timeoutMs: 30_000 });
          waits.push(performance.now() - asked);
          await lock.release();
          counts[i]!++;
        }
      }),
    );
  } finally {
    await Promise.all(contenders.map((r) => r.close()));
  }
  const elapsed = (performance.now() - started) / 1000;
  const total = counts.reduce((a, b) => a + b, 0);
  return { opsPerSecond: total / elapsed, total, perContender: counts, waits };
}

console.log(`[bench] ZooKeeper ${requireTestEnv('zookeeper').version} at ${connectString}; election/lock lease ${timing.leaseDurationMs} ms, renew deadline ${timing.renewDeadlineMs} ms, retry ${timing.retryPeriodMs} ms; session timeout ${zookeeper.sessionTimeoutMs} ms`);
stats('graceful handover (resign -> elected)', await gracefulHandover());
stats('crash failover (SIGKILL -> elected)', await crashFailover());
stats('announce -> peer added', await announceDelay());
const locks = await lockThroughput();
console.log(`${'lock acquire+release, 10 contenders'.padEnd(40)} ${locks.opsPerSecond.toFixed(1)} ops/s (${locks.total} in ${LOCK_SECONDS} s; per contender ${locks.perContender.join(' ')})`);
stats('lock wait (lock() -> held), 10 contenders', locks.waits);
process.exit(0);
