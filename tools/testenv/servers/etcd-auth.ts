import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ETCD, componentVersion } from '../go-components.js';
import { binaryPath, ensureBuilt } from '../go-build.js';
import { port } from '../ports.js';
import { testenvRoot, unitDir } from '../paths.js';
import { runStep } from '../run-step.js';
import { secret } from '../secrets.js';
import { startUnits } from '../unit.js';
import type { EtcdAuthEnv } from '../env-file.js';
import type { Server } from './server.js';
import { etcdUnit } from './etcd-unit.js';

const UNIT = 'etcd-auth';
const LIMITED_USER = 'rollcall-limited';
const LIMITED_ROLE = 'rollcall-limited';
/** The only key range the limited role may read and write. */
const LIMITED_PREFIX = '/rollcall-limited/';

const endpoint = () => `http://127.0.0.1:${port('etcdAuthClient')}`;
const authReadyMarker = () => join(unitDir(UNIT), 'auth-enabled');

/**
 * Creates root and the limited user/role, then enables authentication. Runs once per
 * data directory; passwords go to etcdctl as arguments, never into a log line.
 */
async function enableAuth(): Promise<void> {
  if (existsSync(authReadyMarker())) return;
  const logFile = join(testenvRoot(), 'logs', 'etcd-auth-setup.log');
  const etcdctl = (step: string, ...args: string[]) =>
    runStep({ step: `etcd-auth: ${step}`, command: binaryPath(ETCD, 'etcdctl'), args: [`--endpoints=${endpoint()}`, ...args], logFile });
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
export const etcdAuth: Server = {
  name: 'etcd-auth',
  envKey: 'etcdAuth',
  units: () => [etcdUnit({ name: UNIT, clientPort: port('etcdAuthClient'), peerPort: port('etcdAuthPeer') })],
  install: async () => void (await ensureBuilt(ETCD)),
  async up() {
    await startUnits(etcdAuth.units());
    await enableAuth();
  },
  async describe(): Promise<EtcdAuthEnv> {
    return {
      endpoints: [endpoint()],
      root: { user: 'root', password: secret('etcd-root') },
      limited: { user: LIMITED_USER, password: secret('etcd-limited'), role: LIMITED_ROLE, prefix: LIMITED_PREFIX },
      version: componentVersion(ETCD),
    };
  },
};
