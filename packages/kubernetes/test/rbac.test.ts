import { createRegistry, ErrorCode, type Logger, type Registry } from '@rollcall/core';
import { serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { reaperRoundTrip } from './reaper-paths.js';

const plugins = [registryPlugin as never];
const admin = new Admin();
let namespace: string;
let coordinatorConfig: string;
let memberConfig: string;
let unboundConfig: string;
const opened: Registry[] = [];
const logLines: string[] = [];
const logger: Logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((level) => [level, (...args: unknown[]) => logLines.push(JSON.stringify(args, (_k, v) => (v instanceof Error ? { message: v.message, cause: String(v.cause) } : v)))])) as unknown as Logger;

function tokenOf(kubeconfig: string): string {
  return (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]!.user.token;
}

async function open(kubeconfig: string, identity: string, reaper = false): Promise<Registry> {
  const member = reaper ? { member: { liveness: 'reaper' as const, heartbeatIntervalMs: 500, leaseDurationMs: 2000 } } : {};
  const registry = await createRegistry({ type: 'kubernetes', cluster: reaper ? 'rbac-reaper' : 'rbac', identity, ...member, kubernetes: { kubeconfig, namespace } }, { plugins, logger });
  opened.push(registry);
  return registry;
}

beforeAll(async () => {
  namespace = await admin.namespace('rbac');
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
  await admin.applyManifest('rollcall-member.yaml', namespace);
  coordinatorConfig = await serviceAccountKubeconfig(namespace, 'rollcall-coordinator');
  memberConfig = await serviceAccountKubeconfig(namespace, 'rollcall-member');
  unboundConfig = await serviceAccountKubeconfig(namespace, 'nobody');
});

afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
});

describe('shipped RBAC, with real service-account tokens', () => {
  it('the coordinator Role is enough to announce, discover, campaign and lock', async () => {
    const registry = await open(coordinatorConfig, 'coordinator-1');
    await registry.announce({ role: 'master', payload: { cpu: 0.1 } });
    await waitFor(async () => (await registry.members('master')).length > 0, 10_000, 'the member through its own watch');
    expect((await registry.members('master')).map((m) => m.id)).toEqual(['coordinator-1']);
    const leadership = registry.campaign('scheduler');
    const token = await leadership.whenElected(AbortSignal.timeout(10_000));
    expect(token).toBeGreaterThan(0);
    const lock = await registry.lock('nightly', { timeoutMs: 10_000 });
    expect(lock.fencingToken).toBeGreaterThan(0);
    await lock.release();
    await leadership.resign();
  });

  it('the member Role is enough to announce and discover', async () => {
    const registry = await open(memberConfig, 'worker-1');
    const handle = await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
    await handle.update({ status: 'BUSY' });
    await waitFor(async () => (await registry.members('worker')).some((m) => m.id === 'worker-1'), 10_000, 'worker-1 through the watch');
    await handle.withdraw();
  });

  it('with registry.member.liveness=reaper, the member Role is enough to announce, heartbeat and withdraw, and the coordinator Role to reap', async () => {
    await reaperRoundTrip(await open(coordinatorConfig, 'coordinator-r', true), await open(memberConfig, 'worker-r', true), 'worker-r');
  });

  it('the member Role trying to campaign or lock gets PERMISSION_DENIED naming what it lacks, and changes nothing', async () => {
    const registry = await open(memberConfig, 'worker-2');
    const before = (await admin.leases(namespace)).map((l) => `${l.metadata!.name}@${l.metadata!.resourceVersion}`).sort();
    const leadership = registry.campaign('member-must-not-lead');
    const error = await leadership.whenElected(AbortSignal.timeout(10_000)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    expect((error as Error).message).toContain('update leases.coordination.k8s.io');
    expect((error as Error).message).toContain(`namespace ${namespace}`);
    await expect(registry.lock('nightly', { timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await expect(registry.tryLock('nightly')).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    const after = (await admin.leases(namespace)).map((l) => `${l.metadata!.name}@${l.metadata!.resourceVersion}`).sort();
    expect(after).toEqual(before);
  });

  it('the member Role cannot take over a live election either', async () => {
    const leader = await open(coordinatorConfig, 'coordinator-2');
    const leadership = leader.campaign('contested');
    await leadership.whenElected(AbortSignal.timeout(10_000));
    const registry = await open(memberConfig, 'worker-3');
    await expect(registry.campaign('contested').whenElected(AbortSignal.timeout(10_000))).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    expect(leadership.isLeader).toBe(true);
  });

  it('an identity with no binding is refused at connect with PERMISSION_DENIED', async () => {
    await expect(open(unboundConfig, 'nobody')).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
  });

  it('no token appears in any error or log line', async () => {
    const tokens = [coordinatorConfig, memberConfig, unboundConfig].map(tokenOf);
    const error = await open(unboundConfig, 'nobody-2').catch((e: unknown) => e as Error);
    const texts = [String(error), (error as Error).stack ?? '', JSON.stringify(error), ...logLines];
    for (const token of tokens) for (const text of texts) expect(text).not.toContain(token);
    expect(logLines.length).toBeGreaterThan(0);
  });
});
