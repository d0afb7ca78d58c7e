import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Registry, RegistryEvents } from '@rollcall/core';
import { nextEvent } from '@rollcall/conformance';
import { readTestEnv, TcpProxy, type KubernetesEnv } from '@rollcall/tools/testenv';

/** The test API server from tools/ (started by the global setup). */
export function kubeEnv(): KubernetesEnv {
  const env = readTestEnv().kubernetes;
  if (!env) throw new Error('the kubernetes test environment is not up: npm run testenv -- up kubernetes');
  return env;
}

/** The admin kubeconfig with its server replaced, e.g. by a proxy in front of it. */
export function kubeconfigVia(server: string, source = kubeEnv().kubeconfig): string {
  // The test environment writes kubeconfigs as JSON.
  const raw = readJson<{ clusters: { cluster: { server: string } }[] }>(source);
  for (const c of raw.clusters) c.cluster.server = server;
  const dir = join(kubeEnv().kubeconfig, '..', 'rollcall-kubernetes-tests');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `kubeconfig-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(raw), { mode: 0o600 });
  return file;
}

/** A proxy in front of the API server and a kubeconfig through it. */
export async function proxiedKubeconfig(source?: string): Promise<{ proxy: TcpProxy; kubeconfig: string }> {
  const proxy = await TcpProxy.start(kubeEnv().server);
  return { proxy, kubeconfig: kubeconfigVia(`https://${proxy.address}`, source) };
}

export function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** The next `type` event of a registry matching `match`: conformance's nextEvent, typed for RegistryEvents. Subscribe before acting. */
export function registryEvent<K extends keyof RegistryEvents>(registry: Registry, type: K, timeoutMs: number, match: (event: RegistryEvents[K]) => boolean = () => true): Promise<RegistryEvents[K]> {
  return nextEvent<RegistryEvents, K>(registry, type, timeoutMs, match);
}
