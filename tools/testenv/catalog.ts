import type { Server } from './servers/server.js';
import type { Unit } from './unit.js';
import { zookeeper } from './servers/zookeeper.js';
import { zookeeperEnsemble } from './servers/zookeeper-ensemble.js';
import { mariadb } from './servers/mariadb.js';
import { postgres } from './servers/postgres.js';
import { etcd } from './servers/etcd.js';
import { etcdAuth } from './servers/etcd-auth.js';
import { kubernetes } from './servers/kubernetes.js';
import { TestenvError } from './errors.js';

/** Every server the environment offers, in the order `up` lists them. */
export const SERVERS: readonly Server[] = [zookeeper, zookeeperEnsemble, mariadb, postgres, etcd, etcdAuth, kubernetes];

/** Names accepted by `up`/`down` and the global setup. */
export type ServerName = 'zookeeper' | 'zookeeper-ensemble' | 'mariadb' | 'postgres' | 'etcd' | 'etcd-auth' | 'kubernetes';

export const SERVER_NAMES = SERVERS.map((s) => s.name) as ServerName[];

/** The servers with these names (all of them when none is given); unknown names are errors. */
export function serversNamed(names: readonly string[]): Server[] {
  if (names.length === 0) return [...SERVERS];
  return names.map((name) => {
    const server = SERVERS.find((s) => s.name === name);
    if (!server) throw new TestenvError(`unknown server "${name}"; known: ${SERVER_NAMES.join(', ')}`);
    return server;
  });
}

/** A server or a single unit of one (e.g. "kube-apiserver", "zookeeper-ensemble-2"). */
export type Target = { server: Server; units: Unit[]; wholeServer: boolean };

/** Resolves a server name or a unit name; unknown names are errors listing both. */
export function resolveTarget(name: string): Target {
  const server = SERVERS.find((s) => s.name === name);
  if (server) return { server, units: server.units(), wholeServer: true };
  for (const s of SERVERS) {
    const unit = s.units().find((u) => u.name === name);
    if (unit) return { server: s, units: [unit], wholeServer: false };
  }
  const units = SERVERS.flatMap((s) => s.units().map((u) => u.name));
  throw new TestenvError(`unknown server or unit "${name}"; servers: ${SERVER_NAMES.join(', ')}; units: ${units.join(', ')}`);
}
