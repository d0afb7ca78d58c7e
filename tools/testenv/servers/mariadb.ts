import { existsSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ensureDebianPackages } from '../install/debian-packages.js';
import { portAt } from '../process/ports.js';
import { testenvRoot, unitDir } from '../env/paths.js';
import { runStep } from '../process/run-step.js';
import { secret } from '../env/secrets.js';
import { startUnits, type Unit } from '../process/unit.js';
import { debianPackageVersion } from '../install/debian-version.js';
import { defineBackend, defineServer, type Credentials } from './server.js';

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

/** Offset of its one port from the instance's port base. */
const PORT_OFFSET = 306;
const port = () => portAt(PORT_OFFSET);

const UNIT = 'mariadb';
const DATABASE = 'rollcall_test';
const USER = 'rollcall';
const READ_ONLY_USER = 'rollcall_readonly';

const dir = () => unitDir(UNIT);
const dataDir = () => join(dir(), 'data');
const socketPath = () => join(dir(), 'mariadb.sock');
const setupLog = () => join(testenvRoot(), 'logs', 'mariadb-setup.log');

/** Runs mariadbd as root only when we are root (it refuses root unless told). */
const runAsRootArgs = () => (process.getuid?.() === 0 ? ['--user=root'] : []);

/**
 * True when the server sends a MySQL protocol v10 handshake. Probed on the unix socket:
 * TCP probes that hang up count as connect errors and MariaDB would block the host.
 */
function sendsHandshake(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.setTimeout(2_000, () => socket.destroy());
    socket.once('data', (chunk) => {
      // packet header is 4 bytes; the payload starts with protocol version 10
      resolve(chunk.length > 4 && chunk[4] === 10);
      socket.destroy();
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

function mariadbUnit(): Unit {
  const p = port();
  return {
    name: UNIT,
    ports: [p],
    startTimeoutMs: 60_000,
    async prepare() {
      mkdirSync(dir(), { recursive: true });
      if (existsSync(join(dataDir(), 'mysql'))) return;
      await runStep({
        step: 'initialise the MariaDB data directory (mariadb-install-db)',
        command: 'mariadb-install-db',
        args: ['--no-defaults', `--datadir=${dataDir()}`, '--auth-root-authentication-method=socket', '--skip-test-db', ...runAsRootArgs()],
        logFile: setupLog(),
      });
    },
    command() {
      return {
        command: '/usr/sbin/mariadbd',
        args: [
          '--no-defaults',
          ...runAsRootArgs(),
          `--datadir=${dataDir()}`,
          `--socket=${socketPath()}`,
          `--pid-file=${join(dir(), 'mariadbd.pid')}`,
          `--port=${p}`,
          '--bind-address=127.0.0.1',
          '--skip-name-resolve',
          '--skip-log-bin',
          '--innodb-buffer-pool-size=64M',
          '--max-connections=500',
          // tests kill clients on purpose; never block 127.0.0.1 for "too many connection errors"
          '--max-connect-errors=1000000000',
          '--log-warnings=1',
          '--character-set-server=utf8mb4',
          '--collation-server=utf8mb4_unicode_ci',
        ],
        cwd: dir(),
      };
    },
    isHealthy: () => sendsHandshake(socketPath()),
  };
}

/** Idempotent SQL that creates the test database and both users (kept out of every log). */
function setupSql(): string {
  const pw = secret('mariadb-rollcall');
  const roPw = secret('mariadb-readonly');
  return `
CREATE DATABASE IF NOT EXISTS ${DATABASE};
CREATE USER IF NOT EXISTS '${USER}'@'127.0.0.1' IDENTIFIED BY '${pw}';
CREATE USER IF NOT EXISTS '${USER}'@'localhost' IDENTIFIED BY '${pw}';
GRANT ALL PRIVILEGES ON \`rollcall\\_%\`.* TO '${USER}'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`rollcall\\_%\`.* TO '${USER}'@'localhost';
CREATE USER IF NOT EXISTS '${READ_ONLY_USER}'@'127.0.0.1' IDENTIFIED BY '${roPw}';
CREATE USER IF NOT EXISTS '${READ_ONLY_USER}'@'localhost' IDENTIFIED BY '${roPw}';
GRANT SELECT ON \`rollcall\\_%\`.* TO '${READ_ONLY_USER}'@'127.0.0.1';
GRANT SELECT ON \`rollcall\\_%\`.* TO '${READ_ONLY_USER}'@'localhost';
FLUSH PRIVILEGES;
`;
}

/** MariaDB from Debian's mariadb-server: own datadir, socket and port; a test database and two users. */
export const mariadb = defineServer({
  name: 'mariadb',
  envKey: 'mariadb',
  units: () => [mariadbUnit()],
  install: () => ensureDebianPackages(['mariadb-server', 'mariadb-client']),
  async up(): Promise<void> {
    await startUnits(mariadb.units());
    await runStep({
      step: 'create the MariaDB test database and users',
      command: 'mariadb',
      args: ['--no-defaults', `--socket=${socketPath()}`, '--user=root', '--batch'],
      input: setupSql(),
      logFile: setupLog(),
    });
  },
  async describe(): Promise<MariadbEnv> {
    return {
      host: '127.0.0.1',
      port: port(),
      socket: socketPath(),
      database: DATABASE,
      user: USER,
      password: secret('mariadb-rollcall'),
      readOnly: { user: READ_ONLY_USER, password: secret('mariadb-readonly') },
      version: debianPackageVersion('mariadb-server'),
    };
  },
});

/** The mariadb backend. */
export const mariadbBackend = defineBackend({
  name: 'mariadb',
  servers: [mariadb],
  portOffsets: [PORT_OFFSET],
  executables: ['mariadbd'],
});
