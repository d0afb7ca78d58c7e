import type { MemberLiveness, Registry } from '@rollcall/core';
import { describe, it } from 'vitest';
import { skipReason, type ConformanceConfig, type ConformancePod, type PodCapability, type RegistryCapabilities } from './capabilities.js';
import { badInputCases } from './registry/bad-input-cases.js';
import { connectionCases } from './registry/connection-cases.js';
import { crashCases } from './registry/crash-cases.js';
import { electionCases } from './registry/election-cases.js';
import { failoverCases } from './registry/failover-cases.js';
import { incarnationCases } from './registry/incarnation-cases.js';
import { createHarness } from './registry/harness.js';
import { lifecycleCases } from './registry/lifecycle-cases.js';
import { listingCases } from './registry/listing-cases.js';
import { lockCases } from './registry/lock-cases.js';
import { membershipCases } from './registry/membership-cases.js';
import { readOnlyCases } from './registry/read-only-cases.js';
import { restartCases } from './registry/restart-cases.js';
import { resolveTimings, type ConformanceTimings } from './timings.js';

/** What `registryConformance` needs from a backend. */
export interface RegistryConformanceOptions {
  /** The backend's name, shown in every title: `memory`, `etcd`, ... */
  name: string;
  /**
   * Creates a connected Registry from `config`: the object form without `type`
   * or a backend section (a fresh `cluster`, an `identity`, the suite's timings,
   * and in the bad-input cases deliberately broken keys). Add `type` and the
   * backend's own section, and pass the rest through unchanged, e.g.
   * `(config) => createRegistry({ ...config, type: 'etcd', etcd: { endpoints } })`.
   * The suite closes every registry it creates. In the `pod` liveness mode
   * `pod` is the registry's own pod (see {@link PodCapability}), which the
   * configuration must name; it is absent for the bad-input cases' calls.
   */
  createRegistry(config: ConformanceConfig, pod?: ConformancePod): Promise<Registry>;
  /** What the backend supports beyond the SPI; cases needing a missing one are skipped, with the reason in the title. */
  capabilities?: RegistryCapabilities;
  /** Lease, heartbeat and bound timings; see {@link ConformanceTimings} for the defaults. */
  timings?: Partial<ConformanceTimings>;
  /**
   * The member liveness mode every registry of the suite (crash children too) runs with. Default: the configuration's default, `heartbeat`.
   * `pod` needs the `pods` capability: without it the run is one skipped case that says so.
   */
  liveness?: MemberLiveness;
}

/**
 * Registers the Registry API cases against registries from the backend's
 * factory: membership and its incarnations, elections, locks, the cluster-wide views (roles(),
 * elections(), locks() and their watches), close(), bad input, disconnects, a
 * crashed client, a read-only registry and a server restart. Call it at the top level of a vitest file.
 */
export function registryConformance(options: RegistryConformanceOptions): void {
  const timings = resolveTimings(options.timings);
  const capabilities = options.capabilities ?? {};
  describe(`${options.name}: Registry API`, () => {
    if (options.liveness === 'pod' && !capabilities.pods) {
      it.skip(skipReason(options.name, 'pods', 'the Registry API with registry.member.liveness=pod'), () => {});
      return;
    }
    const harness = createHarness(options.name, options.createRegistry, capabilities, timings, options.liveness);
    membershipCases(harness);
    incarnationCases(harness);
    electionCases(harness);
    lockCases(harness);
    listingCases(harness);
    lifecycleCases(harness);
    badInputCases(harness);
    connectionCases(harness);
    crashCases(harness);
    readOnlyCases(harness);
    restartCases(harness);
    failoverCases(harness);
  });
}
