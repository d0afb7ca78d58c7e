import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ConfigSource, createRegistry, type Leadership, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/spi';
import type { SqlRecordStore } from './store.js';

/** What the SQL benchmark needs from a backend. */
export interface SqlBenchmarkOptions {
  name: string;
  /**
   * The configuration of a registry as process number `slot` would have it:
   * slots with different numbers must get their own connections and poller
   * (as separate processes would), so the numbers include the poll.
   */
  config(cluster: string, identity: string, slot: number): ConfigSource;
  /** Rounds of the handover and failover measurements. At least 50. */
  rounds: number;
  /** Seconds of each throughput and idle-load window. */
  windowSeconds: number;
  print?: (line: string) => void;
}

const election = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1);
  return `n=${s.length} p50=${f(percentile(s, 50))} ms p90=${f(percentile(s, 90))} ms p99=${f(percentile(s, 99))} ms max=${f(s[s.length - 1]!)} ms`;
}

/** A pause uniform over more than one poll interval, so a round starts at a random phase of every poller. */
const dephase = () => new Promise((r) => setTimeout(r, 50 + Math.random() * 250));

const elected = (l: Leadership) => new Promise<number>((resolve) => l.once('elected', () => resolve(performance.now())));

/** A child process that campaigns with the configuration it is sent; it says `elected` when it leads. */
function campaignChild(config: ConfigSource): Promise<{ kill(): void; elected: Promise<void> }> {
  const child = fork(fileURLToPath(new URL('./benchmark-child.js', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // The configuration (with any password) goes over IPC, never on a command line.
  child.send({ config });
  let resolveElected!: () => void;
  const electedPromise = new Promise<void>((r) => (resolveElected = r));
  child.on('message', (m: { type: string }) => m.type === 'elected' && resolveElected());
  return new Promise((resolve, reject) => {
    child.once('message', (m: { type: string; error?: string }) => {
      if (m.type === 'ready') resolve({ kill: () => child.kill('SIGKILL'), elected: electedPromise });
      else reject(new Error(m.error));
    });
    child.once('exit', (code) => code !== null && code !== 0 && reject(new Error(`benchmark child exited ${code}`)));
  });
}

/**
 * Prints, for one SQL backend: graceful handover and crash failover (a child
 * killed with SIGKILL) p50/p99, announce-to-added delay, lock operations per
 * second among 10 contenders, and the statements per second one idle process
 * sends. Every client but the crash child is in this process, each with its own
 * connections and poller, so each change travels through the database.
 */
export async function runSqlBenchmark(options: SqlBenchmarkOptions): Promise<void> {
  const print = options.print ?? ((line: string) => console.log(line));
  const run = Date.now().toString(36);
  const open: Registry[] = [];
  const registry = async (cluster: string, identity: string, slot: number, extra: Record<string, unknown> = {}) => {
    const r = await createRegistry({ ...(options.config(cluster, identity, slot) as object), election, lock: election, ...extra } as ConfigSource);
    open.push(r);
    return r;
  };
  const statements = (r: Registry) => (registryStore(r) as SqlRecordStore).database.dialect.statementCount;
  print(`# ${options.name}: ${new Date().toISOString()}, node ${process.version}, election/lock lease ${election.leaseDurationMs} ms, renew deadline ${election.renewDeadlineMs} ms, retry ${election.retryPeriodMs} ms`);

  try {
    {
      // Graceful handover: the leader resigns; the other candidate is woken by the watch.
      const cluster = `bh${run}`;
      const [ra, rb] = await Promise.all([registry(cluster, 'a', 1), registry(cluster, 'b', 2)]);
      let leader = ra.campaign('bench');
      await leader.whenElected();
      let leaderRegistry = ra;
      let other = rb;
      const samples: number[] = [];
      for (let i = 0; i < options.rounds; i++) {
        const next = other.campaign('bench');
        await dephase(); // also lets the candidate see the held lease first
        const done = elected(next);
        const t0 = performance.now();
        await leader.resign();
        samples.push((await done) - t0);
        [leader, leaderRegistry, other] = [next, other, leaderRegistry];
      }
      await leader.resign();
      print(`graceful handover (resign → other elected): ${summary(samples)}`);
    }

    {
      // Crash failover: a leader in a child process is killed; the survivor takes over after the lease.
      const cluster = `bf${run}`;
      const survivorRegistry = await registry(cluster, 'survivor', 3);
      const samples: number[] = [];
      for (let i = 0; i < options.rounds; i++) {
        const child = await campaignChild({ ...(options.config(cluster, `child-${i}`, 4) as object), election } as ConfigSource);
        await child.elected;
        const survivor = survivorRegistry.campaign('bench');
        await dephase();
        const done = elected(survivor);
        const t0 = performance.now();
        child.kill();
        samples.push((await done) - t0);
        await survivor.resign();
      }
      print(`crash failover (SIGKILL → other elected; lease ${election.leaseDurationMs} ms): ${summary(samples)}`);
      print(`  minus the lease (which runs from the last renew seen, up to one retry period before the kill): ${summary(samples.map((s) => s - election.leaseDurationMs))}`);
    }

    {
      // Announce → added at another client.
      const cluster = `ba${run}`;
      const [writer, reader] = await Promise.all([registry(cluster, 'writer', 5), registry(cluster, 'reader', 6)]);
      const seen = new Map<string, number>();
      reader.watchMembers('worker', (e) => e.type === 'added' && seen.set(e.member.id, performance.now()));
      const samples: number[] = [];
      for (let i = 0; i < options.rounds * 2; i++) {
        const id = `m${i}`;
        const t0 = performance.now();
        await writer.announce({ role: 'worker', id, payload: { i } });
        while (!seen.has(id)) await new Promise((r) => setTimeout(r, 1));
        samples.push(seen.get(id)! - t0);
        await dephase();
      }
      print(`announce → added at another client: ${summary(samples)}`);
    }

    {
      // Lock operations per second: 10 contenders, each lock() then release() in a loop.
      const cluster = `bl${run}`;
      const contenders = await Promise.all(Array.from({ length: 10 }, (_, i) => registry(cluster, `c${i}`, 10 + i)));
      const perContender = contenders.map(() => 0);
      const end = performance.now() + options.windowSeconds * 1000;
      await Promise.all(
        contenders.map(async (r, i) => {
          while (performance.now() < end) {
            const lock = await r.lock('bench', { timeoutMs: 60_000 });
            perContender[i]!++;
            await lock.release();
          }
        }),
      );
      const ops = perContender.reduce((a, b) => a + b, 0);
      print(
        `lock operations among 10 contenders: ${(ops / options.windowSeconds).toFixed(1)} acquire+release per second (${ops} in ${options.windowSeconds} s; per contender min ${Math.min(...perContender)}, max ${Math.max(...perContender)})`,
      );
    }

    {
      // Statements one idle process sends: first with nothing held, then with a member, a leadership and an observer.
      const cluster = `bi${run}`;
      const idle = await registry(cluster, 'idle', 30, { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 }, election: { leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 } });
      const measure = async () => {
        const before = statements(idle);
        await new Promise((r) => setTimeout(r, options.windowSeconds * 1000));
        return (statements(idle) - before) / options.windowSeconds;
      };
      print(`idle process, nothing held: ${(await measure()).toFixed(2)} statements per second`);
      await idle.announce({ role: 'worker', id: 'idle' });
      const l = idle.campaign('idle');
      await l.whenElected();
      idle.observe('idle');
      print(`idle process, one member (heartbeat 5 s), one leadership (retry 2 s), one observer: ${(await measure()).toFixed(2)} statements per second`);
    }
  } finally {
    await Promise.allSettled(open.map((r) => r.close()));
  }
}
