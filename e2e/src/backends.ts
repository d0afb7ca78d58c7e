import { join } from 'node:path';
import { kubeconfigVia, requireTestEnv, restartServer, type ServerName } from '@rollcall/tools/testenv';

/** The backends the soak runs on. `memory` is not one: it lives inside one process. */
export const BACKEND_NAMES = ['sqlite', 'mysql', 'postgres', 'etcd', 'zookeeper', 'kubernetes'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export interface Address {
  host: string;
  port: number;
}

/** How the soak reaches one backend's server from tools/testenv. */
export interface SoakBackend {
  readonly name: BackendName;
  /** The test servers it needs (tools/testenv names), brought up before the soak. */
  readonly servers: readonly ServerName[];
  /** Where the server listens, for a proxy in front of it; undefined when there is no server (sqlite). */
  server(): Address | undefined;
  /** The backend section of a candidate's registry configuration, connecting to `via` (a proxy in front of the server); sqlite's file goes in `workDir`. */
  section(via: Address | undefined, workDir: string): Record<string, unknown>;
  /** Restarts the server for the server-restart fault; undefined when there is no server. */
  readonly restart: (() => Promise<void>) | undefined;
  /**
   * Whether a watcher is told of every change of a record, in order (a change
   * log or a revisioned watch), rather than of its latest state (ZooKeeper's
   * one-shot watches: two quick changes may reach it as one).
   */
  readonly watchSeesEveryChange: boolean;
}

const hostPort = (address: string): Address => {
  const url = new URL(address.includes('://') ? address : `tcp://${address}`);
  return { host: url.hostname, port: Number(url.port) };
};

const BACKENDS: Record<BackendName, SoakBackend> = {
  sqlite: {
    name: 'sqlite',
    servers: [],
    server: () => undefined,
    section: (_via, workDir) => ({ path: join(workDir, 'soak.db') }),
    restart: undefined,
    watchSeesEveryChange: true,
  },
  mysql: {
    name: 'mysql',
    servers: ['mariadb'],
    server: () => ({ host: requireTestEnv('mariadb').host, port: requireTestEnv('mariadb').port }),
    section: (via) => {
      const env = requireTestEnv('mariadb');
      return { host: via!.host, port: via!.port, user: env.user, password: env.password, database: env.database };
    },
    restart: () => restartServer('mariadb'),
    watchSeesEveryChange: true,
  },
  postgres: {
    name: 'postgres',
    servers: ['postgres'],
    server: () => ({ host: requireTestEnv('postgres').host, port: requireTestEnv('postgres').port }),
    section: (via) => {
      const env = requireTestEnv('postgres');
      return { host: via!.host, port: via!.port, user: env.user, password: env.password, database: env.database };
    },
    restart: () => restartServer('postgres'),
    watchSeesEveryChange: true,
  },
  etcd: {
    name: 'etcd',
    servers: ['etcd'],
    server: () => hostPort(requireTestEnv('etcd').endpoints[0]!),
    section: (via) => ({ endpoints: [`http://${via!.host}:${via!.port}`] }),
    restart: () => restartServer('etcd'),
    watchSeesEveryChange: true,
  },
  zookeeper: {
    name: 'zookeeper',
    servers: ['zookeeper'],
    server: () => ({ host: requireTestEnv('zookeeper').host, port: requireTestEnv('zookeeper').port }),
    // The session outlives a short cut; the registry's own deadlines are shorter (see the timings).
    section: (via) => ({ connectString: `${via!.host}:${via!.port}`, sessionTimeoutMs: 4000, openAcl: true }),
    restart: () => restartServer('zookeeper'),
    watchSeesEveryChange: false,
  },
  kubernetes: {
    name: 'kubernetes',
    servers: ['kubernetes'],
    server: () => hostPort(requireTestEnv('kubernetes').server),
    // The cut goes through a kubeconfig that points at the candidate's proxy.
    section: (via) => ({ namespace: requireTestEnv('kubernetes').namespace, kubeconfig: kubeconfigVia(`https://${via!.host}:${via!.port}`) }),
    restart: () => restartServer('kube-apiserver'),
    watchSeesEveryChange: true,
  },
};

export function soakBackend(name: string): SoakBackend {
  if (!(BACKEND_NAMES as readonly string[]).includes(name)) throw new Error(`unknown backend ${JSON.stringify(name)}; the soak runs on ${BACKEND_NAMES.join(', ')}`);
  return BACKENDS[name as BackendName];
}

/**
 * The backends a test run covers: all of them, or those named in
 * SOAK_BACKENDS (comma-separated), e.g. to rerun one after a failure.
 */
export function backendsUnderTest(env: Readonly<Record<string, string | undefined>> = process.env): SoakBackend[] {
  const names = env.SOAK_BACKENDS?.split(',').map((n) => n.trim()).filter(Boolean) ?? BACKEND_NAMES;
  return names.map(soakBackend);
}

/** The backends a migration to Kubernetes is proven from. */
export const MIGRATION_SOURCES: readonly BackendName[] = ['zookeeper', 'etcd', 'mysql', 'postgres'];

/**
 * The migrations a test run covers: from each of {@link MIGRATION_SOURCES} to
 * kubernetes, or from those named in MIGRATE_FROM (comma-separated; empty: none).
 */
export function migrationsUnderTest(env: Readonly<Record<string, string | undefined>> = process.env): BackendName[] {
  const names = env.MIGRATE_FROM === undefined ? MIGRATION_SOURCES : env.MIGRATE_FROM.split(',').map((n) => n.trim()).filter(Boolean);
  return names.map((n) => soakBackend(n).name);
}

/**
 * The backends a rolling update from the release before incarnations is
 * proven on by default: all but ZooKeeper, whose watch can fold a taken-over
 * member's delete and create into no event (an observer then lacks the member
 * until the role's next change: 2 of 6 runs; see docs/failover.md,
 * "Rolling update from the release before incarnations").
 */
export const RELEASE_ROLLING_BACKENDS: readonly BackendName[] = ['sqlite', 'mysql', 'postgres', 'etcd', 'kubernetes'];

/**
 * The backends a rolling update from the release before incarnations is
 * proven on: {@link RELEASE_ROLLING_BACKENDS}, or those named in
 * RELEASE_ROLLING (comma-separated; empty: none).
 */
export function releaseRollingUnderTest(env: Readonly<Record<string, string | undefined>> = process.env): SoakBackend[] {
  const names = env.RELEASE_ROLLING === undefined ? RELEASE_ROLLING_BACKENDS : env.RELEASE_ROLLING.split(',').map((n) => n.trim()).filter(Boolean);
  return names.map(soakBackend);
}
