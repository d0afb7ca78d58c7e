import type { Server, Backend } from './servers/server.js';
import type { Unit } from './process/unit.js';
import { zookeeperBackend } from './servers/zookeeper.js';
import { mariadbBackend } from './servers/mariadb.js';
import { postgresBackend } from './servers/postgres.js';
import { etcdBackend } from './servers/etcd.js';
import { kubernetesBackend } from './servers/kubernetes.js';
import { TestenvError } from './env/errors.js';

/**
 * Every backend the environment serves, one descriptor each (`servers/<name>.ts`), in the
 * order `up` lists their servers. A new backend is its descriptor file, its line here and
 * its one-line global setup, `setup/setup-<name>.ts`.
 */
export const BACKENDS = [zookeeperBackend, mariadbBackend, postgresBackend, etcdBackend, kubernetesBackend] as const;

type AnyServer = (typeof BACKENDS)[number]['servers'][number];

/** Names accepted by `up`/`down` and the global setup. */
export type ServerName = AnyServer['name'];

/** The env file's sections: one per server, named by its `envKey`, typed by its `describe()`. */
export type EnvSections = { [S in AnyServer as S['envKey']]?: Awaited<ReturnType<S['describe']>> };

/** Throws naming both backends when two claim one port offset. */
export function assertDistinctPorts(backends: readonly Backend[]): void {
  const owner = new Map<number, string>();
  for (const backend of backends) {
    for (const offset of backend.portOffsets) {
      const other = owner.get(offset);
      if (other !== undefined && other !== backend.name) throw new TestenvError(`port offset ${offset} is claimed by both ${other} and ${backend.name}`);
      owner.set(offset, backend.name);
    }
  }
}
assertDistinctPorts(BACKENDS);

/** Every server the environment offers, in the order `up` lists them. */
export const SERVERS: readonly Server[] = BACKENDS.flatMap((b): readonly Server[] => b.servers);

export const SERVER_NAMES = SERVERS.map((s) => s.name) as ServerName[];

/** Executables of every backend's processes: what `down` may stop as a stray. */
export const SERVER_EXECUTABLES: ReadonlySet<string> = new Set(BACKENDS.flatMap((b) => b.executables));

/** Every backend's Go programs, each once (`testenv build`). */
export const GO_COMPONENTS = [...new Set(BACKENDS.flatMap((b) => ('goComponents' in b ? b.goComponents : [])))];

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
