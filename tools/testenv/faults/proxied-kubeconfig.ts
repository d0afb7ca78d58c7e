import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTestEnv } from '../env/env-file.js';
import { TcpProxy } from './tcp-proxy.js';

/**
 * A copy of a kubeconfig (default: the admin's) with every cluster's server
 * replaced by `server`, e.g. a proxy in front of the API server; returns its
 * path. The API server's certificate names 127.0.0.1, so TLS still verifies
 * through a proxy on loopback.
 */
export function kubeconfigVia(server: string, source = requireTestEnv('kubernetes').kubeconfig): string {
  // The test environment writes kubeconfigs as JSON.
  const config = JSON.parse(readFileSync(source, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  for (const c of config.clusters) c.cluster.server = server;
  const dir = join(requireTestEnv('kubernetes').kubeconfig, '..', 'proxied-kubeconfigs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `kubeconfig-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

/** A TCP proxy in front of the API server and a kubeconfig (default: the admin's) that goes through it, so one client can be cut off alone. */
export async function proxiedKubeconfig(source?: string): Promise<{ proxy: TcpProxy; kubeconfig: string }> {
  const proxy = await TcpProxy.start(requireTestEnv('kubernetes').server);
  return { proxy, kubeconfig: kubeconfigVia(`https://${proxy.address}`, source) };
}
