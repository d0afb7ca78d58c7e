import type { Registry, RegistryEvents } from '@rollcall/core';
import { nextEvent } from '@rollcall/conformance';
import { readTestEnv, type KubernetesEnv } from '@rollcall/tools/testenv';

/** The test API server from tools/ (started by the global setup). */
export function kubeEnv(): KubernetesEnv {
  const env = readTestEnv().kubernetes;
  if (!env) throw new Error('the kubernetes test environment is not up: npm run testenv -- up kubernetes');
  return env;
}

/** The next `type` event of a registry matching `match`: conformance's nextEvent, typed for RegistryEvents. Subscribe before acting. */
export function registryEvent<K extends keyof RegistryEvents>(registry: Registry, type: K, timeoutMs: number, match: (event: RegistryEvents[K]) => boolean = () => true): Promise<RegistryEvents[K]> {
  return nextEvent<RegistryEvents, K>(registry, type, timeoutMs, match);
}
