import type { TcpFault } from '@rollcall/tools/testenv';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import type { SoakBackend } from './backends.js';
import type { SoakCluster } from './cluster.js';

/**
 * The faults the soak applies:
 * - `resign`: the leader resigns (and campaigns again at once);
 * - `kill`: SIGKILL, then a restart under the same name after up to one lease;
 * - `pause`: SIGSTOP for the election lease plus 0.5–2.5 s, then SIGCONT;
 * - `cut`: the candidate's connections cut at its TCP proxy (reset, blackhole or stall) for the lease plus 0.5–2 s, then healed;
 * - `server-restart`: the backend's server restarted through tools/testenv;
 * - `withdraw`: a member update raced by its withdraw, then the member announced again.
 */
export type FaultKind = 'resign' | 'kill' | 'pause' | 'cut' | 'server-restart' | 'withdraw';
export const FAULT_KINDS: readonly FaultKind[] = ['resign', 'kill', 'pause', 'cut', 'server-restart', 'withdraw'];

/**
 * The faults a candidate in a pod gets (see candidate-pods.ts): the container
 * SIGKILLed (the kubelet restarts it in the same pod) or SIGSTOPped (its
 * readiness probe fails) as a crash or a freeze inside the pod would hit it,
 * its API connection cut at its proxy, and the commands. Not `server-restart`:
 * the real node's API server is the one every real-node suite shares.
 */
export const POD_FAULT_KINDS: readonly FaultKind[] = ['resign', 'kill', 'pause', 'cut', 'withdraw'];

/** One fault as the soak applied it (`K`: the scenario's fault kinds; the soak's by default). */
export interface FaultRecord<K extends string = FaultKind> {
  kind: K;
  /** When it began: the signal sent, the command sent, the cut made, the server stop begun. CLOCK_MONOTONIC ms. */
  at: number;
  /** When it ended: SIGCONT, heal, the server healthy again, the candidate restarted. */
  until: number;
  /** The candidate it hit; undefined for a server restart, which hits all. */
  target: string | undefined;
  /** The election's leader (by the events seen so far) when it began, if any. */
  leader: { name: string; token: number } | undefined;
}

/** One round of the schedule, before shuffling: resigns are cheap, so twice. */
const ROUND: readonly FaultKind[] = ['resign', 'resign', 'kill', 'pause', 'cut', 'server-restart', 'withdraw'];

/** How a cut breaks the connections (see tools' TcpProxy): refused at once, silent, or held. */
export const CUT_MODES: readonly TcpFault[] = ['reset', 'blackhole', 'stall'];

/** A fault at a candidate hits the current leader this often (the others hit a follower). */
const LEADER_SHARE = 0.75;

/** The faults a backend supports: no connection to cut and no server to restart on sqlite. */
export function faultsFor(backend: SoakBackend): FaultKind[] {
  return FAULT_KINDS.filter((kind) => (kind === 'cut' || kind === 'server-restart' ? backend.server() !== undefined : true));
}

/** Random order, every kind once (resign twice) per round, so a short run still applies each. */
export class FaultSchedule {
  private bag: FaultKind[] = [];
  private completed = -1;

  constructor(private readonly kinds: readonly FaultKind[]) {
    if (kinds.length === 0) throw new Error('the soak needs at least one fault kind');
  }

  /** Full rounds applied so far. */
  get rounds(): number {
    return Math.max(0, this.completed);
  }

  next(): FaultKind {
    if (this.bag.length === 0) {
      this.completed++;
      this.bag = ROUND.filter((k) => this.kinds.includes(k));
      for (let i = this.bag.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [this.bag[i], this.bag[j]] = [this.bag[j]!, this.bag[i]!];
      }
    }
    return this.bag.pop()!;
  }
}

/** Uniformly at random in [min, max). */
export const between = (min: number, max: number) => min + Math.random() * (max - min);
/** A cut mode at random. */
export const randomCutMode = (): TcpFault => CUT_MODES[Math.floor(Math.random() * CUT_MODES.length)]!;
/** How long a fault lasts; shapes the workload, synchronises nothing. */
export const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Applies one fault and resolves when it is over (the candidate resumed, healed or restarted; the server healthy). */
export async function applyFault(kind: FaultKind, cluster: SoakCluster, backend: SoakBackend, leaseMs: number): Promise<FaultRecord> {
  const leader = cluster.leader;
  const snapshot = leader && { name: leader.name, token: leader.token };
  const target =
    kind === 'server-restart' ? undefined
    : kind === 'withdraw' ? cluster.randomCandidate()
    : leader && (kind === 'resign' || Math.random() < LEADER_SHARE) ? leader.process
    : cluster.randomCandidate(leader?.process);
  if (kind !== 'server-restart' && !target) throw new Error(`no candidate to ${kind}: no leader and no live candidate`);
  const at = monotonicMs();
  switch (kind) {
    case 'resign':
      target!.send({ op: 'resign' });
      // Over when the leader has stepped down (a resign never waits out anything but its in-flight write).
      if (leader?.process === target) await target!.event('lost', 30_000, (e) => e.token === leader!.token);
      break;
    case 'kill':
      await target!.kill();
      await hold(between(0, leaseMs));
      await cluster.restart(target!.name);
      break;
    case 'pause':
      target!.pause();
      await hold(leaseMs + between(500, 2500));
      target!.resume();
      break;
    case 'cut': {
      const proxy = cluster.proxyOf(target!.name);
      proxy.cut(randomCutMode());
      await hold(leaseMs + between(500, 2000));
      proxy.heal();
      break;
    }
    case 'server-restart':
      await backend.restart!();
      break;
    case 'withdraw':
      target!.send({ op: 'rejoin' });
      await target!.event('raced', 30_000, (e) => e.t > at);
      break;
  }
  return { kind, at, until: monotonicMs(), target: target?.name, leader: snapshot };
}
