import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiException, CoordinationV1Api, CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { mintServiceAccountToken, readTestEnv, serverWait } from '@rollcall/tools/testenv';

function adminConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(readTestEnv().kubernetes!.kubeconfig);
  return kc;
}

function tokenConfig(token: string): KubeConfig {
  const kube = readTestEnv().kubernetes!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'testenv', server: kube.server, caFile: kube.caFile }],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: 'testenv', user: 'sa' }],
    currentContext: 'sa',
  });
  return kc;
}

const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}`;

describe('kubernetes', () => {
  it('creates and reads a Lease', async () => {
    const { namespace } = readTestEnv().kubernetes!;
    const api = adminConfig().makeApiClient(CoordinationV1Api);
    const name = unique('smoke-lease');
    // a real API server insists on MicroTime's six fractional digits: a plain Date
    // (three digits, as client-node serialises it) is refused with 400
    const renewTime = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    await api.createNamespacedLease({
      namespace,
      body: { metadata: { name }, spec: { holderIdentity: 'smoke', leaseDurationSeconds: 15, renewTime: renewTime as never } },
    });
    try {
      const lease = await api.readNamespacedLease({ name, namespace });
      expect(lease.spec?.holderIdentity).toBe('smoke');
      expect(lease.spec?.leaseDurationSeconds).toBe(15);
      expect(lease.metadata?.resourceVersion).toMatch(/^\d+$/);
    } finally {
      await api.deleteNamespacedLease({ name, namespace });
    }
  });

  it('refuses a service account without any RBAC binding with 403', async () => {
    const { namespace } = readTestEnv().kubernetes!;
    const serviceAccount = unique('unbound');
    const token = await mintServiceAccountToken(namespace, serviceAccount);
    const api = tokenConfig(token).makeApiClient(CoordinationV1Api);
    const error = await api.listNamespacedLease({ namespace }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiException);
    expect((error as ApiException<string>).code).toBe(403);
    // the refusal names the real service-account identity: the token was authenticated
    expect(String((error as ApiException<string>).body)).toContain(`system:serviceaccount:${namespace}:${serviceAccount}`);
  });

  it('has a Ready kwok node on which a pod reaches Running', async () => {
    const kube = readTestEnv().kubernetes!;
    const core = adminConfig().makeApiClient(CoreV1Api);
    const node = await core.readNode({ name: kube.nodes[0]! });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

    const name = unique('smoke-pod');
    await core.createNamespacedPod({
      namespace: kube.namespace,
      body: { metadata: { name }, spec: { containers: [{ name: 'main', image: 'registry.invalid/smoke:1' }] } },
    });
    try {
      let pod: V1Pod | undefined;
      await waitFor(
        async () => {
          pod = await core.readNamespacedPod({ name, namespace: kube.namespace });
          return pod.status?.phase === 'Running';
        },
        60_000,
        serverWait({ what: `pod ${name} to be Running`, intervalMs: 250 }),
      );
      expect(pod?.spec?.nodeName).toBe(kube.nodes[0]); // placed by kube-scheduler
      expect(pod?.status?.containerStatuses?.[0]?.ready).toBe(true); // run by kwok
    } finally {
      await core.deleteNamespacedPod({ name, namespace: kube.namespace, gracePeriodSeconds: 0 });
    }
  });

  it('writes an audit log with the requests of each user', async () => {
    const kube = readTestEnv().kubernetes!;
    const core = adminConfig().makeApiClient(CoreV1Api);
    const marker = unique('audit-marker');
    await core.readNamespacedConfigMap({ name: marker, namespace: kube.namespace }).catch(() => undefined);
    interface AuditEvent {
      verb: string;
      user: { username: string };
      objectRef?: { name?: string };
    }
    let found: AuditEvent | undefined;
    await waitFor(
      () => {
        const lines = readFileSync(kube.auditLogPath, 'utf8').trimEnd().split('\n');
        found = lines
          .filter((l) => l.includes(marker))
          .map((l) => JSON.parse(l) as AuditEvent)
          .find((e) => e.objectRef?.name === marker);
        return found !== undefined;
      },
      15_000,
      serverWait({ what: 'the audit event of our request', intervalMs: 250 }),
    );
    expect(found?.verb).toBe('get');
    expect(found?.user.username).toBe('rollcall-admin');
  });
});
