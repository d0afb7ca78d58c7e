import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDebianPackages } from '../install/debian-packages.js';
import { portAt } from '../process/ports.js';
import { testenvRoot, unitDir } from '../env/paths.js';
import { runStep } from '../process/run-step.js';
import { secret } from '../env/secrets.js';
import { startUnits, type Unit } from '../process/unit.js';
import { TestenvError } from '../env/errors.js';
import { debianPackageVersion } from '../install/debian-version.js';
import { defineBackend, defineServer, type Credentials } from './server.js';

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

/** Offset of its one port from the instance's port base. */
const PORT_OFFSET = 432;
const port = () => portAt(PORT_OFFSET);

const UNIT = 'postgres';
const DATABASE = 'rollcall_test';
const USER = 'rollcall';
const READ_ONLY_USER = 'rollcall_readonly';
/** The operating-system account Debian's package creates; the server refuses to run as root. */
const OS_USER = 'postgres';

const dir = () => unitDir(UNIT);
const dataDir = () => join(dir(), 'data');
/** Holds the unix socket (`.s.PGSQL.<port>`); mode 0700, so only root and the server's account reach it. */
const socketDir = () => join(dir(), 'socket');
const setupLog = () => join(testenvRoot(), 'logs', 'postgres-setup.log');

/** The newest server version under /usr/lib/postgresql (Debian installs each major version there). */
function binDir(): string {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.map(Number).sort((a, b) => b - a)[0];
  if (newest === undefined) throw new TestenvError('no PostgreSQL server under /usr/lib/postgresql: is Debian\'s postgresql package installed?');
  return `/usr/lib/postgresql/${newest}/bin`;
}

const isRoot = () => process.getuid?.() === 0;

/** `command args` as the server's own account when we are root (initdb and postgres refuse root); setpriv execs, so the pid stays the server's. */
function asServerUser(command: string, args: string[]): { command: string; args: string[] } {
  if (!isRoot()) return { command, args };
  return { command: 'setpriv', args: ['--reuid', OS_USER, '--regid', OS_USER, '--init-groups', '--', command, ...args] };
}

/** Directories the server writes, owned by its account. */
function ownedDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  if (isRoot()) {
    const [uid, gid] = serverAccount();
    chownSync(path, uid, gid);
  }
}

let account: [number, number] | undefined;
function serverAccount(): [number, number] {
  if (account) return account;
  // getent, not /etc/passwd parsing: the account may come from elsewhere
  const out = execFileSync('getent', ['passwd', OS_USER], { encoding: 'utf8' }).split(':');
  if (out.length < 4) throw new TestenvError(`no ${OS_USER} account: is Debian's postgresql package installed?`);
  account = [Number(out[2]), Number(out[3])];
  return account;
}

/** True when the server accepts connections (pg_isready: past recovery and startup, not shutting down). */
function acceptsConnections(): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(join(binDir(), 'pg_isready'), ['--quiet', '-U', 'postgres', '-d', 'postgres', '-h', socketDir(), '-p', String(port()), '-t', '2'], { timeout: 5_000 }, (err) => resolve(!err));
  });
}

function postgresUnit(): Unit {
  const p = port();
  return {
    name: UNIT,
    ports: [p],
    startTimeoutMs: 60_000,
    // SIGTERM is postgres's "smart" shutdown, which waits for every client to disconnect; SIGINT is the fast one.
    stopSignal: 'SIGINT',
    async prepare() {
      ownedDir(dir());
      ownedDir(socketDir());
      if (existsSync(join(dataDir(), 'PG_VERSION'))) return;
      const initdb = asServerUser(join(binDir(), 'initdb'), [
        `--pgdata=${dataDir()}`,
        '--username=postgres',
        // the superuser connects only over the private socket; TCP clients need a password
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C.UTF-8',
        '--no-sync',
      ]);
      await runStep({ step: 'initialise the PostgreSQL data directory (initdb)', ...initdb, cwd: dir(), logFile: setupLog() });
    },
    command() {
      return {
        ...asServerUser(join(binDir(), 'postgres'), [
          '-D',
          dataDir(),
          '-c',
          `port=${p}`,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          `unix_socket_directories=${socketDir()}`,
          '-c',
          'max_connections=500',
          '-c',
          'shared_buffers=64MB',
          // a test server: durability across a machine crash is not needed, speed under load is
          '-c',
          'fsync=off',
          '-c',
          'synchronous_commit=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'log_min_messages=warning',
          // statements counted by kind, for the benchmark's requests per minute
          '-c',
          'shared_preload_libraries=pg_stat_statements',
          '-c',
          'pg_stat_statements.track_utility=on',
        ]),
        cwd: dir(),
      };
    },
    isHealthy: acceptsConnections,
  };
}

const quoteLiteral = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Idempotent SQL that creates both users and the test database's owner rights (kept out of every log). */
function setupSql(): string {
  const pw = secret('postgres-rollcall');
  const roPw = secret('postgres-readonly');
  return `
SELECT 'CREATE ROLE ${USER} LOGIN CREATEDB' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${USER}')\\gexec
SELECT 'CREATE ROLE ${READ_ONLY_USER} LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${READ_ONLY_USER}')\\gexec
ALTER ROLE ${USER} PASSWORD ${quoteLiteral(pw)};
ALTER ROLE ${READ_ONLY_USER} PASSWORD ${quoteLiteral(roPw)};
SELECT 'CREATE DATABASE ${DATABASE} OWNER ${USER}' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '${DATABASE}')\\gexec
GRANT pg_read_all_stats TO ${USER};
\\connect ${DATABASE}
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
GRANT USAGE ON SCHEMA public TO ${READ_ONLY_USER};
ALTER DEFAULT PRIVILEGES FOR ROLE ${USER} GRANT SELECT ON TABLES TO ${READ_ONLY_USER};
`;
}

/** Debian's clusters (`/etc/postgresql/<version>/<name>`), as `<version> <name>`. */
function debianClusters(): Set<string> {
  const root = '/etc/postgresql';
  if (!existsSync(root)) return new Set();
  return new Set(readdirSync(root).flatMap((version) => (/^\d+$/.test(version) ? readdirSync(join(root, version)).map((name) => `${version} ${name}`) : [])));
}

/**
 * Debian's postgresql package creates a cluster `main` on the default port 5432
 * and starts it (where an init system runs), a server nobody asked for that
 * would hold 5432 from then on. Clusters the install just created are stopped
 * and dropped (`pg_dropcluster --stop`); one that existed before, maybe someone's
 * data, is left alone. Tests use their own data directory and port, never these.
 */
async function dropNewDebianClusters(before: ReadonlySet<string>): Promise<void> {
  for (const cluster of debianClusters()) {
    if (before.has(cluster)) continue;
    const [version, name] = cluster.split(' ') as [string, string];
    const drop = ['pg_dropcluster', '--stop', version, name];
    await runStep({
      step: `drop the cluster ${version}/${name} that Debian's postgresql package created on the default port`,
      ...(isRoot() ? { command: drop[0]!, args: drop.slice(1) } : { command: 'sudo', args: ['-n', ...drop] }),
      logFile: setupLog(),
    });
  }
}

/** PostgreSQL from Debian's postgresql: own data directory, socket and port; a test database and two users. */
export const postgres = defineServer({
  name: 'postgres',
  envKey: 'postgres',
  units: () => [postgresUnit()],
  async install() {
    const before = debianClusters();
    await ensureDebianPackages(['postgresql', 'postgresql-client']);
    await dropNewDebianClusters(before);
  },
  async up(): Promise<void> {
    await startUnits(postgres.units());
    await runStep({
      step: 'create the PostgreSQL test database and users',
      command: join(binDir(), 'psql'),
      args: ['--no-psqlrc', '--quiet', '-v', 'ON_ERROR_STOP=1', '-h', socketDir(), '-p', String(port()), '-U', 'postgres', '-d', 'postgres'],
      input: setupSql(),
      logFile: setupLog(),
    });
  },
  async describe(): Promise<PostgresEnv> {
    return {
      host: '127.0.0.1',
      port: port(),
      database: DATABASE,
      user: USER,
      password: secret('postgres-rollcall'),
      readOnly: { user: READ_ONLY_USER, password: secret('postgres-readonly') },
      version: debianPackageVersion(`postgresql-${binDir().split('/')[4]}`),
    };
  },
});

/** The postgres backend. */
export const postgresBackend = defineBackend({
  name: 'postgres',
  servers: [postgres],
  portOffsets: [PORT_OFFSET],
  executables: ['postgres'],
});
