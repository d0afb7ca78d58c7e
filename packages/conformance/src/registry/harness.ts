import type { MemberEvent, MemberLiveness, Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { afterEach, beforeEach } from 'vitest';
import type { ConformanceConfig, ConformancePod, RegistryCapabilities } from '../capabilities.js';
import { CrashClient } from '../crash/client.js';
import { uniqueCluster } from '../names.js';
import type { ConformanceTimings } from '../timings.js';
import { waitFor } from '../wait-for.js';

/**
 * When a member that stopped being live must be removed for its peers, as the
 * suite's liveness mode decides it: measured from `at` (`performance.now()`),
 * not sooner than `minMs` after it, nor later than `maxMs`.
 */
export interface Lapse {
  readonly at: number;
  readonly minMs: number;
  readonly maxMs: number;
}

/** Per-case resources of the registry suite: a fresh cluster, the registries and children it opened, cleaned up after each case. */
export interface Harness {
  readonly backend: string;
  readonly timings: ConformanceTimings;
  readonly capabilities: RegistryCapabilities;
  /** The member liveness mode the suite runs with. */
  readonly liveness: MemberLiveness;
  /** This case's cluster. */
  cluster(): string;
  /** The configuration the suite's registries use: this case's cluster, `identity`, the suite's timings, then `overrides`. */
  config(identity: string, overrides?: Partial<ConformanceConfig>): ConformanceConfig & { cluster: string };
  /** Opens a registry on this case's cluster; closed after the case. */
  registry(identity: string, overrides?: Partial<ConformanceConfig>): Promise<Registry>;
  /** Calls the backend's factory with exactly `config` (for invalid configurations); a registry it returns is closed after the case. */
  create(config: ConformanceConfig): Promise<Registry>;
  /** Slow election and lock timings: a poll could not explain a handover faster than their retry period. */
  slow(): Partial<ConformanceConfig>;
  partition(registry: Registry): Promise<void>;
  /** Restores `registry`'s connection; in the pod mode a pod that {@link Harness.lapse} turned not Ready is Ready again. */
  heal(registry: Registry): Promise<void>;
  /** Starts a crash child on this case's cluster, its wall clock shifted by `wallSkewMs`; killed after the case if still alive. */
  crashChild(identity: string, overrides?: Partial<ConformanceConfig>, wallSkewMs?: number): Promise<CrashClient>;
  /** True when members live by their pods' readiness (the `pod` liveness mode, with the `pods` capability): no heartbeat leases. */
  readonly pods: boolean;
  /**
   * `member`'s process stopped at `since` (killed) or was cut off from the
   * backend: makes that known the way the mode learns it. In the lease modes
   * nothing is done (its silence expires the lease); in the pod mode its pod
   * turns not Ready, as its kubelet or the node controller would report it.
   * Returns the window its member's removal must fall in.
   */
  lapse(member: Registry | CrashClient, since: number): Promise<Lapse>;
  /**
   * Where a lapsed member's record goes away for good: in the lease modes a
   * reader deletes it (nothing to do here); in the pod mode it goes with its
   * pod, which is deleted here. Returns how long that may take, in milliseconds.
   */
  retire(member: Registry | CrashClient): Promise<number>;
}

export function createHarness(backend: string, factory: (config: ConformanceConfig, pod?: ConformancePod) => Promise<Registry>, capabilities: RegistryCapabilities, timings: ConformanceTimings, liveness?: MemberLiveness): Harness {
  let cluster = '';
  const registries: Registry[] = [];
  const partitioned = new Set<Registry>();
  const children: CrashClient[] = [];
  /** Every pod started for this case (deleted after it, even one whose registry failed to start), and whose each is. */
  const started: ConformancePod[] = [];
  const podOf = new Map<Registry | CrashClient, ConformancePod>();
  /** Members whose pods lapse() turned not Ready. */
  const lapsed = new Set<Registry | CrashClient>();
  const podCapability = liveness === 'pod' ? capabilities.pods : undefined;
  const readinessBoundMs = timings.watchBoundMs + (podCapability?.readinessDelayMs ?? 0);
  /** A pod of its own for a registry about to start, in the pod mode. */
  const startPod = async (identity: string) => {
    const pod = await podCapability?.start(identity);
    if (pod) started.push(pod);
    return pod;
  };
  /**
   * A case that timed out runs on in the background: what it starts after its
   * end would join the next case's cluster (its announces that case's events).
   * It fails instead, naming the case's end.
   */
  const stillCurrent = (forCluster: string, what: string) => {
    if (forCluster !== cluster) throw new Error(`${what} was asked for by a case that has ended (timed out?) before it could start; not started in a later case's cluster`);
  };

  beforeEach(() => {
    cluster = uniqueCluster('reg');
  });

  afterEach(async () => {
    await Promise.allSettled(children.splice(0).map((c) => c.kill()));
    for (const r of partitioned) await capabilities.partition?.heal(r);
    partitioned.clear();
    await Promise.allSettled(registries.splice(0).map((r) => r.close()));
    podOf.clear();
    lapsed.clear();
    await Promise.allSettled(started.splice(0).map((p) => p.delete()));
  });

  const harness: Harness = {
    backend,
    timings,
    capabilities,
    liveness: liveness ?? 'heartbeat',
    cluster: () => cluster,
    config: (identity, overrides = {}) => ({
      cluster,
      identity,
      election: timings.election,
      lock: timings.lock,
      member: liveness ? { ...timings.member, liveness } : timings.member,
      requestTimeoutMs: timings.requestTimeoutMs,
      ...overrides,
    }),
    async registry(identity, overrides) {
      const forCluster = cluster;
      const pod = await startPod(identity);
      stillCurrent(forCluster, `registry ${identity}`);
      const registry = await factory(harness.config(identity, overrides), pod);
      registries.push(registry);
      if (pod) podOf.set(registry, pod);
      return registry;
    },
    async create(config) {
      const registry = await factory(config);
      registries.push(registry);
      return registry;
    },
    slow: () => ({ election: timings.slowLease, lock: timings.slowLease }),
    async partition(registry) {
      partitioned.add(registry);
      await capabilities.partition!.partition(registry);
    },
    async heal(registry) {
      await capabilities.partition!.heal(registry);
      partitioned.delete(registry);
      // A partition lapsed in the pod mode was its node's: back, its pod is Ready again.
      if (lapsed.delete(registry)) await podOf.get(registry)!.ready();
    },
    async crashChild(identity, overrides, wallSkewMs = 0) {
      const forCluster = cluster;
      const pod = await startPod(identity);
      stillCurrent(forCluster, `crash child ${identity}`);
      const child = await CrashClient.start(capabilities.crashChild!, harness.config(identity, overrides), 10_000, wallSkewMs, pod);
      children.push(child);
      if (pod) podOf.set(child, pod);
      return child;
    },
    pods: podCapability !== undefined,
    async lapse(member, since) {
      const pod = podOf.get(member);
      if (!podCapability || !pod) {
        const m = timings.member;
        // Its last heartbeat was at most one interval before `since`.
        return { at: since, minMs: m.leaseDurationMs - m.heartbeatIntervalMs - timings.toleranceMs, maxMs: m.leaseDurationMs + timings.watchBoundMs };
      }
      // Not before its pod is reported not Ready: readers vouch for a Ready pod's member however long it is silent.
      const at = performance.now();
      lapsed.add(member);
      await pod.notReady();
      return { at, minMs: 0, maxMs: readinessBoundMs + (performance.now() - at) };
    },
    async retire(member) {
      const pod = podOf.get(member);
      if (!podCapability || !pod) return timings.watchBoundMs;
      await pod.delete();
      return readinessBoundMs;
    },
  };
  return harness;
}

/** A `watchMembers` subscription whose events are kept, each with `performance.now()` at arrival. */
export interface MemberLog {
  readonly events: MemberEvent[];
  readonly times: number[];
  /** Events from index `from` on, as `type id` strings. */
  summary(from?: number): string[];
  /** Resolves with the first event from index `from` on that matches. */
  next(match: (event: MemberEvent) => boolean, timeoutMs: number, from?: number): Promise<MemberEvent>;
  close(): void;
}

export function logMembers(registry: Registry, role: string): MemberLog {
  const events: MemberEvent[] = [];
  const times: number[] = [];
  const subscription = registry.watchMembers(role, (event) => {
    events.push(event);
    times.push(performance.now());
  });
  return {
    events,
    times,
    summary: (from = 0) => events.slice(from).map((e) => `${e.type} ${e.member.id}`),
    next: (match, timeoutMs, from = 0) => waitFor(() => events.slice(from).find(match), timeoutMs, `a member event in ${role}`),
    close: () => subscription.close(),
  };
}

/** The error code of a rejection or a throw; fails the case when the call succeeds. */
export async function codeOf(call: Promise<unknown> | (() => unknown)): Promise<string | undefined> {
  try {
    await (typeof call === 'function' ? call() : call);
  } catch (err) {
    return (err as { code?: string }).code;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Everything written to this registry's cluster, as `key holder` strings: "nothing changed" means this stays empty. */
export async function writtenKeys(registry: Registry): Promise<string[]> {
  const list = await registryStore(registry).list('');
  return list.records.map((r) => r.key).sort();
}
