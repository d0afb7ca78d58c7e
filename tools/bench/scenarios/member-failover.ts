import { observeBackend, type Registry } from '@rollcall/core';
import { CrashClient } from '@rollcall/conformance/crash';
import { summarize, type Summary } from '../../testenv/measure/stats.js';
import { OpenRegistries, type BenchTarget } from '../target.js';
import { BENCH_TIMING, benchCluster, dephase, WAIT_BOUND_MS } from '../timing.js';

/** A member's heartbeat and lease, milliseconds (registry.member.*). */
export interface MemberTiming {
  heartbeatIntervalMs: number;
  leaseDurationMs: number;
}

/** What one timing's run measured on one backend. */
export interface MemberFailoverFigures {
  timing: MemberTiming;
  /** SIGKILL of a member → the leader's failover handler starting for its incarnation, ms. */
  latency: Summary;
  /** The leader's backend requests while the failovers ran, beyond its own rate with no member dying, per failover. */
  requestsPerFailover: number;
  /** The leader's backend requests per second with members alive and none dying (its renewals, the failover records' reads). */
  baselinePerSecond: number;
}

async function until(condition: () => boolean, boundMs: number, what: string): Promise<void> {
  const deadline = performance.now() + boundMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Member crash → failover handler start: `members` member processes announce
 * role `worker` (each a child with the given heartbeat and lease); a leader in
 * this process runs `registry.failover('worker', …)`. Once the leader has seen
 * every one, they are SIGKILLed one after another (a random phase apart), and
 * each sample is the time from its kill to the handler starting for its
 * incarnation: the member lease as the leader's member view judges it, plus
 * the failover's own claim. The leader's requests are counted by
 * `observeBackend` over the same window, less its rate over an equal window
 * before any kill.
 */
export async function memberFailover(target: BenchTarget, members: number, timing: MemberTiming): Promise<MemberFailoverFigures> {
  const registries = new OpenRegistries(target);
  const cluster = benchCluster('member-failover');
  const children: CrashClient[] = [];
  try {
    const leader: Registry = await registries.add({ cluster, identity: 'leader', slot: 1 });
    const started = new Map<string, number>();
    const leadership = leader.campaign('masters');
    leader.failover('worker', leadership, async (dead) => {
      if (!started.has(dead.id)) started.set(dead.id, performance.now());
    });
    await leadership.whenElected(AbortSignal.timeout(WAIT_BOUND_MS));
    const present = new Set<string>();
    const view = leader.watchMembers('worker', (e) => (e.type === 'removed' ? present.delete(e.member.id) : present.add(e.member.id)));
    for (let i = 0; i < members; i++) {
      const child = await CrashClient.start(target.crashChild, { cluster, identity: `worker-${i}`, election: BENCH_TIMING, lock: BENCH_TIMING, member: timing }, WAIT_BOUND_MS);
      children.push(child);
      await child.command({ op: 'announce', role: 'worker', id: `worker-${i}` }, WAIT_BOUND_MS);
    }
    await until(() => present.size === members, WAIT_BOUND_MS, 'the leader seeing every member');
    let requests = 0;
    const off = observeBackend(leader, (a) => {
      if (a.type === 'request') requests++;
    });
    // baseline: as long as the run below will take, nobody dying
    const windowMs = timing.leaseDurationMs + members * 500;
    const baselineStart = performance.now();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const baselinePerSecond = (requests / (performance.now() - baselineStart)) * 1000;
    requests = 0;
    const runStart = performance.now();
    const killedAt = new Map<string, number>();
    for (let i = 0; i < members; i++) {
      await dephase();
      killedAt.set(`worker-${i}`, await children[i]!.kill());
    }
    await until(() => started.size === members, timing.leaseDurationMs * 3 + WAIT_BOUND_MS, 'every failover handler starting');
    const runMs = performance.now() - runStart;
    off();
    view.close();
    const samples = [...killedAt].map(([id, at]) => started.get(id)! - at);
    return { timing, latency: summarize(samples), requestsPerFailover: (requests - (baselinePerSecond * runMs) / 1000) / members, baselinePerSecond };
  } finally {
    await Promise.allSettled(children.map((c) => c.kill()));
    await registries.closeAll();
  }
}
