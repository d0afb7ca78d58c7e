import type { Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

/**
 * `rollcall_failovers_started_total`, `rollcall_failovers_resumed_total`,
 * `rollcall_failovers_acknowledged_total` and `rollcall_failovers_pending`
 * for every `registry.failover()` of this process, from the registry's
 * `failoverStarted`, `failoverAcknowledged` and `failoverPending`.
 */
export function trackFailovers(registry: Registry, m: Instruments): () => void {
  const offs = [
    registry.on('failoverStarted', ({ role, resumed }) => {
      m.failoversStarted.inc({ role });
      // Both series exist from a role's first run: an alert on resumed runs sees 0, not an absent series.
      m.failoversResumed.inc({ role }, resumed ? 1 : 0);
    }),
    registry.on('failoverAcknowledged', ({ role, reason }) => m.failoversAcknowledged.inc({ role, reason })),
    registry.on('failoverPending', ({ role, pending }) => m.failoversPending.set({ role }, pending)),
  ];
  return () => offs.forEach((off) => off());
}
