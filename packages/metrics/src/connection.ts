import type { ConnectionState, Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

const STATES: readonly ConnectionState[] = ['connected', 'suspended', 'lost'];

/** `rollcall_registry_info`, `rollcall_connection_state` (read at each scrape) and `rollcall_connection_changes_total`. */
export function trackConnection(registry: Registry, m: Instruments): () => void {
  m.registryInfo.set({ backend: registry.backend, cluster: registry.config.cluster }, 1);
  const setState = () => {
    for (const state of STATES) m.connectionState.set({ state }, registry.state === state ? 1 : 0);
  };
  setState();
  const offs = (['suspended', 'lost', 'reconnected'] as const).map((state) =>
    registry.on(state, () => {
      m.connectionChanges.inc({ state });
      setState();
    }),
  );
  return () => offs.forEach((off) => off());
}
