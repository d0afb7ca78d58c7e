/**
 * `npm run bench:pods -- --queued N`: the second generation's task store
 * alone (issue 35; restore-queued.ts measures it inside a PodRunner) — N queued task records
 * created as a service account with the store's ConfigMap verbs, 16 in
 * flight, then read back by a fresh informer and put in submit order (a
 * restore's read). Prints requests per record from the audit log, the etcd
 * WAL bytes written per record (the `etcd_disk_wal_write_bytes_total` delta,
 * less the control plane's own rate measured for 5 s before), and the stored
 * size of a record. On the kwok instance only: no pod is made.
 */
import { AuthorizationV1Api } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import type { Logger } from '@rollcall/core';
import { ApiClient, loadKubeConfig, userAgent } from '@rollcall/kube-client';
import { AuditLog, KubeAdmin, machine, requireTestEnv, serviceAccountKubeconfig, summarize, up } from '@rollcall/tools/testenv';
import { dataBytes, recordName, type TaskRecordBody } from '../src/task-record.js';
import { TaskStore } from '../src/task-store.js';
import { idleWalRate, walWindow } from './etcd-wal.js';

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

export async function benchQueued(count: number): Promise<void> {
  await up(['kubernetes']);
  const admin = new KubeAdmin();
  const namespace = await admin.namespace('queued-bench');
  const account = 'task-store';
  await admin.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } });
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: account, namespace }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }] } as never);
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: account, namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account }, subjects: [{ kind: 'ServiceAccount', name: account, namespace }] } as never);
  const user = `system:serviceaccount:${namespace}:${account}`;
  const authz = admin.kc.makeApiClient(AuthorizationV1Api);
  await waitFor(async () => (await authz.createSubjectAccessReview({ body: { spec: { user, resourceAttributes: { namespace, verb: 'create', resource: 'configmaps' } } } })).status?.allowed === true || undefined, 30_000, 'the Role to be granted');
  const kubeconfig = await serviceAccountKubeconfig(namespace, account);
  const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
    await admin.core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined);
  });
  const runner = 'bench';
  const client = new ApiClient(loadKubeConfig({ kubeconfig }), 30_000, userAgent('queued-bench'));
  const writer = new TaskStore({ client, namespace, runner, logger: quiet });

  const idleRate = await idleWalRate();

  // ids reverse-alphabetical: the API server lists by name, which is not the submit order
  const bodies: TaskRecordBody[] = Array.from({ length: count }, (_, i) => ({
    v: 2, state: 'queued', task: { taskId: `task-${String(count - 1 - i).padStart(6, '0')}`, taskType: 'bench', args: ['--n', String(i)], attempt: 1 },
    template: 'bench', specHash: 'b'.repeat(64), submittedAt: new Date().toISOString(), seq: i,
  }));
  log(`creating ${count} queued records in ${namespace}`);
  const window = audit.open();
  const wal = await walWindow(idleRate);
  const createMs: number[] = [];
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const t = performance.now();
      await writer.create(body);
      createMs.push(performance.now() - t);
    }
  }));
  const elapsed = performance.now() - started;
  const walDelta = await wal.close();
  const requests = (await audit.requests(window)).filter((e) => e.user?.username === user);

  const restoreStart = performance.now();
  const reader = new TaskStore({ client, namespace, runner, logger: quiet });
  await reader.start();
  const ordered = reader.inSubmitOrder();
  const restoreMs = performance.now() - restoreStart;
  const outOfOrder = ordered.filter((r, i) => r.body.task.taskId !== bodies[i]?.task.taskId).length;
  reader.close();
  const sample = await admin.core.readNamespacedConfigMap({ namespace, name: recordName(runner, bodies[0]!.task.taskId) });
  client.close();
  await admin.core.deleteNamespace({ name: namespace });

  const create = summarize(createMs);
  const byVerb = requests.reduce<Record<string, number>>((acc, e) => ((acc[e.verb] = (acc[e.verb] ?? 0) + 1), acc), {});
  console.log(`${new Date().toISOString().slice(0, 10)}, ${machine()}`);
  console.log();
  console.log('| queued records | create wall time (16 in flight) | create p50 / p99 | API requests per record | etcd WAL bytes per record | fresh informer list + submit order | read back in submit order | data bytes per record | record as the API server returns it |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  console.log(`| ${count} | ${(elapsed / 1000).toFixed(1)} s | ${Math.round(create.p50)} ms / ${Math.round(create.p99)} ms | ${(requests.length / count).toFixed(2)} (${Object.entries(byVerb).map(([v, n]) => `${v} ${n}`).join(', ')}) | ${Math.round(walDelta / count)} (control plane's idle ${Math.round(idleRate * 1000)} B/s subtracted) | ${Math.round(restoreMs)} ms | ${outOfOrder === 0 ? 'yes' : `no: ${outOfOrder} out of place`} | ${dataBytes(sample.data)} | ${Buffer.byteLength(JSON.stringify(sample))} |`);
}
