import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import etcd3 from 'etcd3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry, type Logger, type Registry } from '@rollcall/core';
import { createEtcdStore, type EtcdStore } from '../src/index.js';
import { rejection, uniqueCluster } from '@rollcall/conformance';
import { etcdAuthEnv } from './support/etcd.js';

const env = etcdAuthEnv();
const LIMITED_PREFIX = env.limited.prefix.replace(/\/$/, '');
// A user whose role may read the limited prefix but not write it: made here, with the root user.
const READER = { user: 'rollcall-etcd-test-reader', role: 'rollcall-etcd-test-reader', password: randomBytes(12).toString('hex') };

const root = new etcd3.Etcd3({ hosts: env.endpoints, auth: { username: env.root.user, password: env.root.password } });
const opened: { close(): Promise<void> }[] = [];

/** Every line logged, with its fields, as text. */
function capturingLogger(): { logger: Logger; text: () => string } {
  const lines: unknown[] = [];
  const log = (fields: unknown, message?: string) => lines.push({ fields: inspect(fields, { depth: 8 }), message });
  return { logger: { debug: log, info: log, warn: log, error: log } as Logger, text: () => JSON.stringify(lines) };
}

/** Everything an error could show: message, stack, every cause, its enumerable fields. */
function everythingIn(err: unknown): string {
  return inspect(err, { depth: 10, showHidden: false }) + JSON.stringify(err) + String((err as Error)?.stack);
}

beforeAll(async () => {
  const roles = (await root.getRoles()).map((r) => r.name);
  if (!roles.includes(READER.role)) await root.role(READER.role).create();
  await root.role(READER.role).grant({ permission: 'Read', range: root.range({ prefix: env.limited.prefix }) });
  const users = (await root.getUsers()).map((u) => u.name);
  if (!users.includes(READER.user)) await root.user(READER.user).create(READER.password);
  else await root.user(READER.user).setPassword(READER.password);
  await root.user(READER.user).addRole(READER.role);
});

afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o.close()));
});
afterAll(() => root.close());

async function limitedStore(extra: Record<string, unknown> = {}): Promise<EtcdStore> {
  const store = await createEtcdStore({ cluster: uniqueCluster('auth'), endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: env.limited.user, password: env.limited.password, allowPlaintextCredentials: true, ...extra });
  opened.push(store);
  return store;
}

describe('password authentication', () => {
  it('the limited user reads and writes inside its prefix, through the registry too', async () => {
    const cluster = uniqueCluster('auth');
    const registry: Registry = await createRegistry({ type: 'etcd', cluster, etcd: { endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: env.limited.user, password: env.limited.password, allowPlaintextCredentials: true } });
    opened.push(registry);
    await registry.announce({ role: 'worker', id: 'w1', payload: { ok: true } });
    const leadership = registry.campaign('scheduler');
    expect(await leadership.whenElected()).toBeGreaterThan(0);
    const keys = await root.getAll().prefix(`${LIMITED_PREFIX}/${cluster}/`).keys();
    expect(keys.sort()).toEqual([`${LIMITED_PREFIX}/${cluster}/election/scheduler`, `${LIMITED_PREFIX}/${cluster}/member/worker/w1`]);
  });

  it('the limited user outside its prefix is refused at connect with PERMISSION_DENIED naming the user and the prefix', async () => {
    const { logger, text } = capturingLogger();
    const cluster = uniqueCluster('outside');
    const err = await rejection(createRegistry({ type: 'etcd', cluster, etcd: { endpoints: env.endpoints, username: env.limited.user, password: env.limited.password, allowPlaintextCredentials: true } }, { logger }));
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toContain(`as user "${env.limited.user}"`);
    expect(err.message).toContain(`/rollcall/${cluster}/`);
    expect(everythingIn(err)).not.toContain(env.limited.password);
    expect(text()).not.toContain(env.limited.password);
  });

  it('a wrong password is UNAUTHENTICATED at connect, and neither password appears in the error or the log', async () => {
    const { logger, text } = capturingLogger();
    const wrong = `wrong-${randomBytes(8).toString('hex')}`;
    const err = await rejection(createRegistry({ type: 'etcd', etcd: { endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: env.limited.user, password: wrong, allowPlaintextCredentials: true } }, { logger }));
    expect(err.code).toBe('UNAUTHENTICATED');
    expect(err.message).toContain(`as user "${env.limited.user}"`);
    for (const secret of [wrong, env.limited.password]) {
      expect(everythingIn(err)).not.toContain(secret);
      expect(text()).not.toContain(secret);
    }
  });

  it('an unknown user is UNAUTHENTICATED', async () => {
    const err = await rejection(createEtcdStore({ endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: 'nobody-here', password: 'whatever-pw', allowPlaintextCredentials: true }));
    expect(err.code).toBe('UNAUTHENTICATED');
  });

  it('no credentials on a server with authentication on: writes are refused, typed', async () => {
    // Without a token etcd treats the caller as no user: reads and writes of any key are denied.
    const err = await rejection(createEtcdStore({ endpoints: env.endpoints, prefix: LIMITED_PREFIX }));
    expect(['PERMISSION_DENIED', 'UNAUTHENTICATED']).toContain(err.code);
    expect(err.message).toContain('without authentication');
  });

  it('a user that may read but not write connects, and its writes and campaigns fail PERMISSION_DENIED, writing nothing', async () => {
    const cluster = uniqueCluster('reader');
    const { logger, text } = capturingLogger();
    const reader = await createEtcdStore({ cluster, endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: READER.user, password: READER.password, allowPlaintextCredentials: true, logger });
    opened.push(reader);
    const record = { holderIdentity: 'r', leaseDurationSeconds: 5, acquireTime: null, renewTime: null, leaseTransitions: 0 };
    expect((await reader.list('')).records).toEqual([]);
    const denied = await rejection(reader.create('lock/x', record));
    expect(denied.code).toBe('PERMISSION_DENIED');
    expect(denied.message).toContain(`create lock/x: permission denied as user "${READER.user}"`);
    expect((await rejection(reader.assertCanHold('election/e'))).code).toBe('PERMISSION_DENIED');

    const registry = await createRegistry({ type: 'etcd', cluster, etcd: { endpoints: env.endpoints, prefix: LIMITED_PREFIX, username: READER.user, password: READER.password, allowPlaintextCredentials: true } }, { logger });
    opened.push(registry);
    expect((await rejection(registry.announce({ role: 'worker', id: 'w1' }))).code).toBe('PERMISSION_DENIED');
    expect((await rejection(registry.campaign('scheduler').whenElected())).code).toBe('PERMISSION_DENIED');
    expect(await root.getAll().prefix(`${LIMITED_PREFIX}/${cluster}/`).keys()).toEqual([]);
    expect(everythingIn(denied)).not.toContain(READER.password);
    expect(text()).not.toContain(READER.password);
  });

  it('the writer can hold what the reader cannot: assertCanHold passes for the limited user and writes nothing', async () => {
    const store = await limitedStore();
    await store.assertCanHold('election/e');
    expect(await store.get('election/e')).toBeUndefined();
  });
});
