import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { componentVersion } from '../install/go-components.js';
import { binaryPath, ensureBuilt } from '../install/go-build.js';
import { portsOf } from '../process/ports.js';
import { testenvRoot, unitDir } from '../env/paths.js';
import { runStep } from '../process/run-step.js';
import { secret } from '../env/secrets.js';
import { daemonPid } from '../process/daemon.js';
import { startUnits } from '../process/unit.js';
import { TestenvError } from '../env/errors.js';
import { defineBackend, defineServer, type Compaction, type Credentials } from './server.js';
import { ETCD, etcdUnit } from './etcd/unit.js';
import { etcdCompact, etcdRevision } from './etcd/gateway.js';

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

/** Offsets from the instance's port base. */
const PORTS = { client: 379, peer: 380, authClient: 479, authPeer: 480 };
const port = portsOf(PORTS);

const endpoint = () => `http://127.0.0.1:${port('client')}`;

/** etcd built from go.etcd.io/etcd/server/v3, no authentication: for the etcd backend. */
export const etcd = defineServer({
  name: 'etcd',
  envKey: 'etcd',
  units: () => [etcdUnit({ name: 'etcd', clientPort: port('client'), peerPort: port('peer') })],
  install: async () => void (await ensureBuilt(ETCD)),
  up: (): Promise<void> => startUnits(etcd.units()),
  async describe(): Promise<EtcdEnv> {
    return { endpoints: [endpoint()], version: componentVersion(ETCD) };
  },
  /** A physical compaction at the current revision: done when it resolves. */
  async compact(): Promise<Compaction> {
    if (daemonPid('etcd') === undefined) throw new TestenvError('etcd is not running (unit etcd): run `npm run testenv -- up etcd`');
    const revision = await etcdRevision(endpoint());
    await etcdCompact(endpoint(), revision);
    return { revision };
  },
});

const AUTH_UNIT = 'etcd-auth';
const LIMITED_USER = 'rollcall-limited';
const LIMITED_ROLE = 'rollcall-limited';
/** The only key range the limited role may read and write. */
const LIMITED_PREFIX = '/rollcall-limited/';

const authEndpoint = () => `http://127.0.0.1:${port('authClient')}`;
const authReadyMarker = () => join(unitDir(AUTH_UNIT), 'auth-enabled');

/**
 * Creates root and the limited user/role, then enables authentication. Runs once per
 * data directory; passwords go to etcdctl as arguments, never into a log line.
 */
async function enableAuth(): Promise<void> {
  if (existsSync(authReadyMarker())) return;
  const logFile = join(testenvRoot(), 'logs', 'etcd-auth-setup.log');
  const etcdctl = (step: string, ...args: string[]) =>
    runStep({ step: `etcd-auth: ${step}`, command: binaryPath(ETCD, 'etcdctl'), args: [`--endpoints=${authEndpoint()}`, ...args], logFile });
  await etcdctl('add user root', 'user', 'add', 'root', `--new-user-password=${secret('etcd-root')}`);
  await etcdctl('grant role root to root', 'user', 'grant-role', 'root', 'root');
  await etcdctl(`add role ${LIMITED_ROLE}`, 'role', 'add', LIMITED_ROLE);
  await etcdctl(`grant ${LIMITED_ROLE} readwrite on ${LIMITED_PREFIX}`, 'role', 'grant-permission', LIMITED_ROLE, '--prefix=true', 'readwrite', LIMITED_PREFIX);
  await etcdctl(`add user ${LIMITED_USER}`, 'user', 'add', LIMITED_USER, `--new-user-password=${secret('etcd-limited')}`);
  await etcdctl(`grant role ${LIMITED_ROLE} to ${LIMITED_USER}`, 'user', 'grant-role', LIMITED_USER, LIMITED_ROLE);
  await etcdctl('enable authentication', 'auth', 'enable');
  writeFileSync(authReadyMarker(), new Date().toISOString() + '\n');
}

/** A second etcd with authentication on: root, and a user limited to one prefix. */
export const etcdAuth = defineServer({
  name: 'etcd-auth',
  envKey: 'etcdAuth',
  units: () => [etcdUnit({ name: AUTH_UNIT, clientPort: port('authClient'), peerPort: port('authPeer') })],
  install: async () => void (await ensureBuilt(ETCD)),
  async up(): Promise<void> {
    await startUnits(etcdAuth.units());
    await enableAuth();
  },
  async describe(): Promise<EtcdAuthEnv> {
    return {
      endpoints: [authEndpoint()],
      root: { user: 'root', password: secret('etcd-root') },
      limited: { user: LIMITED_USER, password: secret('etcd-limited'), role: LIMITED_ROLE, prefix: LIMITED_PREFIX },
      version: componentVersion(ETCD),
    };
  },
});

/** The etcd backend: a plain etcd and one with authentication, from one built binary. */
export const etcdBackend = defineBackend({
  name: 'etcd',
  servers: [etcd, etcdAuth],
  portOffsets: Object.values(PORTS),
  executables: ['etcd'],
  goComponents: [ETCD],
});
