import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { envFilePath } from './paths.js';
import { TestenvError } from './errors.js';

/** Version of the env file's shape; bumped on any incompatible change. */
export const ENV_SCHEMA_VERSION = 1;

export interface ZookeeperEnv {
  /** Client connect string, e.g. "127.0.0.1:21181". */
  connectString: string;
  host: string;
  port: number;
  version: string;
}

export interface ZookeeperEnsembleMember {
  /** ZooKeeper server id (myid), 1..3. */
  id: number;
  /** Unit name for the fault helpers, e.g. "zookeeper-ensemble-2". */
  unit: string;
  host: string;
  clientPort: number;
  quorumPort: number;
  electionPort: number;
}

export interface ZookeeperEnsembleEnv {
  /** All three members, e.g. "127.0.0.1:21281,127.0.0.1:21282,127.0.0.1:21283". */
  connectString: string;
  members: ZookeeperEnsembleMember[];
  version: string;
}

export interface Credentials {
  user: string;
  password: string;
}

export interface MariadbEnv {
  host: string;
  port: number;
  /** Unix socket of the server (same server as host:port). */
  socket: string;
  /** A database that exists and that `user` owns. */
  database: string;
  /** Has every privilege on `database` and may create databases named rollcall_*. */
  user: string;
  password: string;
  /** May read (SELECT) rollcall_* databases but not write: for permission tests. */
  readOnly: Credentials;
  version: string;
}

export interface PostgresEnv {
  /** TCP only (127.0.0.1): the unix socket is private to the server's account and root. */
  host: string;
  port: number;
  /** A database that exists and that `user` owns. */
  database: string;
  /** Owns `database` and may create databases (CREATEDB). */
  user: string;
  password: string;
  /** May connect and read what `user` creates in `database`'s schemas that grant it USAGE, but not write: for permission tests. */
  readOnly: Credentials;
  version: string;
}

export interface EtcdEnv {
  endpoints: string[];
  version: string;
}

export interface EtcdAuthEnv {
  /** An etcd with authentication enabled (a separate server from `etcd`). */
  endpoints: string[];
  /** Root user: every permission. */
  root: Credentials;
  /** Limited user: read and write under `limited.prefix` only, permission denied elsewhere. */
  limited: Credentials & { role: string; prefix: string };
  version: string;
}

export interface KubernetesEnv {
  /** https://127.0.0.1:<port> */
  server: string;
  /** CA that signed the API server's certificate (and every client certificate). */
  caFile: string;
  /** Kubeconfig of a cluster admin (group system:masters). */
  kubeconfig: string;
  /** The admin's client certificate and key, for clients that take files. */
  adminCertFile: string;
  adminKeyFile: string;
  /** JSON-lines audit log of the API server (one audit.k8s.io/v1 Event per line). */
  auditLogPath: string;
  /** Namespaces that exist for tests; tests may create more. */
  namespaces: string[];
  /** The first of `namespaces`. */
  namespace: string;
  /** kwok-managed fake nodes that are Ready: pods scheduled there reach Running. */
  nodes: string[];
  version: string;
  kwokVersion: string;
  /** Present when the instance runs a real node (ROLLCALL_TESTENV_REAL_NODE=1): a kubelet with containerd. */
  realNode?: RealNodeEnv;
}

/** The real node of an instance that has one: a kubelet with containerd, in the instance's network namespace. */
export interface RealNodeEnv {
  name: string;
  /** nodeSelector that puts a pod on it. */
  label: { key: string; value: string };
  /** The taint a pod must tolerate to run there. */
  taint: { key: string; value: string; effect: string };
  /** Node.js and the built workspace packages under /app (`node /app/…`); use imagePullPolicy Never. */
  runtimeImage: string;
  pauseImage: string;
  /** containerd's socket (`ctr --address … -n k8s.io`). */
  containerdSocket: string;
  podLogsDir: string;
  /** The kubelet's cgroup root: every pod's cgroups are below it. */
  cgroupRoot: string;
}

/** The one JSON file `up` writes (at <root>/env.json): every endpoint and credential. */
export interface TestEnv {
  schemaVersion: number;
  root: string;
  /** Absent when that server is not up. */
  zookeeper?: ZookeeperEnv;
  zookeeperEnsemble?: ZookeeperEnsembleEnv;
  mariadb?: MariadbEnv;
  postgres?: PostgresEnv;
  etcd?: EtcdEnv;
  etcdAuth?: EtcdAuthEnv;
  kubernetes?: KubernetesEnv;
}

/** Writes the env file atomically (readers never see a half-written file). */
export function writeTestEnv(env: TestEnv): string {
  const file = envFilePath();
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(env, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

/**
 * Reads the env file written by `npm run testenv -- up` (or the vitest global setup).
 * Throws with the command to run when it is missing.
 */
export function readTestEnv(): TestEnv {
  const file = process.env.ROLLCALL_TESTENV_FILE ?? envFilePath();
  if (!existsSync(file)) {
    throw new TestenvError(`no env file at ${file}: run \`npm run testenv -- up\` or use the @rollcall/tools vitest global setup`);
  }
  const env = JSON.parse(readFileSync(file, 'utf8')) as TestEnv;
  if (env.schemaVersion !== ENV_SCHEMA_VERSION) {
    throw new TestenvError(`env file ${file} has schema ${env.schemaVersion}, expected ${ENV_SCHEMA_VERSION}: run \`npm run testenv -- up\` again`);
  }
  return env;
}

type Section = Exclude<keyof TestEnv, 'schemaVersion' | 'root'>;

/** The env file's section of one server; throws naming the server when it is not up. */
export function requireTestEnv<K extends Section>(section: K): NonNullable<TestEnv[K]> {
  const env = readTestEnv();
  const value = env[section];
  if (!value) throw new TestenvError(`${section} is not up: run \`npm run testenv -- up\` (env file: ${process.env.ROLLCALL_TESTENV_FILE ?? envFilePath()})`);
  return value as NonNullable<TestEnv[K]>;
}
