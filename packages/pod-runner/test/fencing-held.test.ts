import { KubeConfig, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { type Logger, systemClock } from '@rollcall/core';
import { type ApiRequest, ApiClient, ResourceInformer, userAgent } from '@rollcall/kube-client';
import { AuditLog, type AuditEvent, holdRequests, requireTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DECIDE_SETTINGS, type DecideSettings } from '../src/decide.js';
import { FENCING_NAMESPACE_LABEL, fencingPolicy, STALE_TERM_MESSAGE } from '../src/fence-policy.js';
import { buildPod, podName } from '../src/pod-build.js';
import { RUNNER_LABEL, type Pod } from '../src/pod.js';
import { RunnerTerm } from '../src/runner-term.js';
import { type FenceMode, TermFence } from '../src/term-fence.js';
import { recordName, TASK_STATE_LABEL, WRITE_TERM_ANNOTATION, type TaskRecordBody } from '../src/task-record.js';
import { submitTask } from '../src/task-requests.js';
import { TaskStore } from '../src/task-store.js';
import type { Task, TaskStatus } from '../src/task.js';
import { admin, exits, installSuitePolicy, podTemplate, untilAuthorized } from './runner-env.js';

/**
 * The fence's proof (issue 35 §2): a deposed term's write that was already in
 * flight when the next term began is refused by the API server. Two terms of
 * one runner, A (term n) and B (term n + 1), each a RunnerTerm with its own
 * API client and service account (so the audit log tells them apart). A
 * decides a write and sends it; `holdRequests` holds it inside A's client —
 * past every check of A's own — until B has raised the term Lease, passed the
 * probe and done its part of the task, which the test sees through an admin
 * watch. Then the held request goes on, its resourceVersion or preconditions
 * still matching what the server stores: only the fencing policy stands in
 * its way. The policy is this suite's own, bound by a namespace label only
 * this suite's namespace carries; it is replaced, never deleted (an API
 * server drops a paramKind's informer for good once no binding names it,
 * kubernetes#130887).
 */

const SUITE = 'fencing-held-suite';
const ACCOUNT_A = 'rollcall-pod-runner';
const ACCOUNT_B = 'rollcall-pod-runner-b';
const POLICIES = fencingPolicy({ namePrefix: `rollcall-${SUITE}`, namespaceSelector: { matchLabels: { [FENCING_NAMESPACE_LABEL]: SUITE } }, runnerAccounts: [ACCOUNT_A, ACCOUNT_B] }) as unknown as KubernetesObject[];

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const template = podTemplate();
const closers: (() => unknown)[] = [];
let namespace: string;
const kubeconfigs = new Map<string, string>();
let adminClient: ApiClient;
let audit: AuditLog;

/** The runner's Role of the second generation: pods as the shipped Role, records read, written and deleted, the term Lease. */
async function grantRunner(ns: string, accounts: readonly string[]): Promise<void> {
  const rules = [
    { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'] },
    { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ];
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'held-runner', namespace: ns }, rules } as KubernetesObject);
  for (const account of accounts) {
    await admin.objects.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace: ns } });
    await admin.objects.create({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: `held-runner-${account}`, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'held-runner' },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
    } as KubernetesObject);
  }
  for (const account of accounts) {
    await untilAuthorized(ns, account);
    kubeconfigs.set(`${ns}/${account}`, await serviceAccountKubeconfig(ns, account));
  }
}

function clientAs(ns: string, account: string): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigs.get(`${ns}/${account}`)!);
  const client = new ApiClient(kc, 10_000, userAgent('fencing-held-test'), systemClock);
  closers.push(() => client.close());
  return client;
}

beforeAll(async () => {
  namespace = await admin.namespace('fencing-held', { forPods: true });
  await grantRunner(namespace, [ACCOUNT_A, ACCOUNT_B]);
  await installSuitePolicy(POLICIES, namespace, SUITE);
  // The binding judges the namespace once the server's namespace cache shows the label: until then the probe's
  // unstamped dry run is accepted and a term would enter in mode `client`. Refused (or refused for want of a
  // term Lease, 422) names this suite's policy.
  const probe = new TermFence({ client: clientAs(namespace, ACCOUNT_A), namespace, runner: 'held-probe' });
  await waitFor(async () => (await probe.dryRun(undefined)) !== 'accepted' || undefined, 30_000, 'the fencing policy to judge the namespace');
  adminClient = new ApiClient(admin.kc, 10_000, userAgent('fencing-held-test'), systemClock);
  closers.push(() => adminClient.close());
  audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (marker) => {
    await admin.core.readNamespacedPod({ namespace, name: marker }).catch(() => undefined);
  });
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** How a held request was answered once released. */
type Answer = { accepted: true } | { accepted: false; error: Error & { code?: string } };

/** One held request of a term's client, and its answer once released. */
interface Held {
  /** The request as A sent it, once held. */
  held: Promise<ApiRequest>;
  /** Lets the held request go on; resolves with its answer. */
  release(): Promise<Answer>;
  /** Lets it go, if still held, and puts the client's own request back (a failed case must not leave a sync stuck). */
  restore(): void;
}

/**
 * Holds the first request `match` picks inside the client (after every check
 * of the runner's own), and notes the answer to that very request: the
 * recorder sits under `holdRequests`, so it sees the request as released.
 */
function holdOne(client: ApiClient, match: (req: ApiRequest) => boolean): Held {
  const answers = new Map<ApiRequest, Answer>();
  const send = client.request.bind(client);
  client.request = (async (req: ApiRequest) => {
    try {
      const value = await send(req);
      answers.set(req, { accepted: true });
      return value;
    } catch (err) {
      answers.set(req, { accepted: false, error: err as Error });
      throw err;
    }
  }) as ApiClient['request'];
  const hold = holdRequests<ApiRequest>(client, match);
  return {
    held: hold.held,
    async release() {
      const req = await hold.held;
      hold.release();
      return waitFor(() => answers.get(req), 15_000, 'the released request to be answered');
    },
    restore: () => hold.restore(),
  };
}

/** One term as the runner will run it: its own client and store, the term Lease raised and probed by TermFence, then a RunnerTerm on that term. */
interface Term {
  term: number;
  mode: FenceMode;
  delivered: TaskStatus[];
  published: TaskStatus[];
  held?: Held;
  close(): Promise<void>;
}

interface TermOptions {
  /** Which account (and so which runner process) the term is. */
  account: string;
  runner: string;
  /** The term to enter; default the Lease's next. */
  token?: number;
  settings?: Partial<DecideSettings>;
  /** Whether a hand-over is acknowledged; default true. False: it never settles (the process lost it). */
  acknowledge?: boolean;
  /** A write to hold inside this term's client. */
  hold?(req: ApiRequest): boolean;
}

/**
 * Enters a term and starts its RunnerTerm. The one place a term is built: when
 * the runner façade takes over entering terms, only this changes.
 */
async function openTerm(options: TermOptions): Promise<Term> {
  const client = clientAs(namespace, options.account);
  const held = options.hold ? holdOne(client, options.hold) : undefined;
  const fence = new TermFence({ client, namespace, runner: options.runner });
  const { term, mode } = await fence.enter(options.token);
  const store = new TaskStore({ client, namespace, runner: options.runner, logger: quiet });
  closers.push(() => store.close());
  await store.start();
  const delivered: TaskStatus[] = [];
  const published: TaskStatus[] = [];
  const runnerTerm = new RunnerTerm({
    client, namespace, runner: options.runner, term, store, clock: systemClock, logger: quiet,
    templates: new Map([['default', { template }]]),
    capacity: 2,
    settings: { ...DEFAULT_DECIDE_SETTINGS, ...options.settings },
    deliver: (status) => {
      delivered.push(status);
      return options.acknowledge === false ? new Promise<void>(() => {}) : Promise.resolve();
    },
    publish: (status) => void published.push(status),
  });
  closers.push(() => (held?.restore(), runnerTerm.close()));
  await runnerTerm.start();
  return { term, mode, delivered, published, held, close: () => runnerTerm.close() };
}

/** What an admin sees of one runner: its records (a TaskStore on the admin's client) and its pods, each through a watch. */
async function adminWatch(runner: string) {
  const store = new TaskStore({ client: adminClient, namespace, runner, logger: quiet });
  closers.push(() => store.close());
  await store.start();
  const pods = new Map<string, Pod>();
  const informer = new ResourceInformer<Pod>(
    { client: adminClient, logger: quiet, path: `/api/v1/namespaces/${namespace}/pods`, labelSelector: `${RUNNER_LABEL}=${runner}`, resource: 'pods', namespace, silenceTimeoutMs: 90_000, timeoutSeconds: 300 },
    { upsert: (pod) => void pods.set(pod.metadata.name, pod), delete: (pod) => void pods.delete(pod.metadata.name) },
  );
  closers.push(() => informer.close());
  await informer.start();
  return { store, pods };
}

let seq = 0;
async function submit(store: TaskStore, runner: string, task: Task): Promise<void> {
  const submittedAt = new Date().toISOString();
  const { specHash } = buildPod({ runner, namespace, task, template, templateName: 'default', submittedAt });
  const body: TaskRecordBody = { v: 2, state: 'queued', task: { ...task, attempt: 1 }, template: 'default', specHash, submittedAt, seq: ++seq };
  expect((await submitTask(store, body)).type).toBe('created');
}

const podsPath = () => `/api/v1/namespaces/${namespace}/pods`;
const recordPath = (runner: string, taskId: string) => `/api/v1/namespaces/${namespace}/configmaps/${recordName(runner, taskId)}`;
const stateOf = (req: ApiRequest) => (req.body as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels?.[TASK_STATE_LABEL];
const code = (e: AuditEvent) => (e as AuditEvent & { responseStatus?: { code?: number } }).responseStatus?.code ?? 0;
const user = (account: string) => `system:serviceaccount:${namespace}:${account}`;

/** A's write held, then released after B took over: {@link deposedWrite}. */
interface DeposedWrite {
  watch: Awaited<ReturnType<typeof adminWatch>>;
  window: ReturnType<AuditLog['open']>;
  a: Term;
  /** A's held request, as A sent it. */
  request: ApiRequest;
  /** Opens B, the next term, as ACCOUNT_B: it enters at A's term + 1, fenced by the server. */
  successor(options?: Omit<TermOptions, 'account' | 'runner'>): Promise<Term>;
  /** Releases A's held request, which the policy must refuse as stale; then closes A and B. */
  releaseRefused(): Promise<void>;
}

/**
 * A, the first term of `runner` (as ACCOUNT_A), with the one write `options.hold` picks
 * held inside its client; `task` submitted, and resolved once A has sent the write.
 * An admin watch of the runner and an audit window are open from before A.
 */
async function deposedWrite(runner: string, task: Task, options: Omit<TermOptions, 'account' | 'runner'>): Promise<DeposedWrite> {
  const watch = await adminWatch(runner);
  const window = audit.open();
  const a = await openTerm({ ...options, account: ACCOUNT_A, runner });
  await submit(watch.store, runner, task);
  const request = await a.held!.held;
  let b: Term | undefined;
  return {
    watch, window, a, request,
    async successor(successorOptions = {}) {
      b = await openTerm({ ...successorOptions, account: ACCOUNT_B, runner });
      expect(b).toMatchObject({ term: a.term + 1, mode: 'server' });
      return b;
    },
    async releaseRefused() {
      refusedAsStale(await a.held!.release());
      await a.close();
      await b?.close();
    },
  };
}

/** Refused by the fencing policy: a 403 naming the stale term, not a conflict. */
function refusedAsStale(answer: Answer): void {
  if (answer.accepted) throw new Error('the deposed term\'s held request was accepted');
  expect(answer.error.code, answer.error.message).toBe('PERMISSION_DENIED');
  expect(answer.error.message).toContain(STALE_TERM_MESSAGE);
}

/** The audit log's requests on `name` in the window, as `user verb code`. */
async function audited(window: ReturnType<AuditLog['open']>, resource: string, name: string): Promise<string[]> {
  const requests = await audit.requests(window);
  const who = (u = '') => (u === user(ACCOUNT_A) ? 'A' : u === user(ACCOUNT_B) ? 'B' : u);
  return requests.filter((e) => e.objectRef?.resource === resource && e.objectRef.name === name && !e.objectRef.subresource && ['create', 'update', 'patch', 'delete'].includes(e.verb) && !(e.requestURI ?? '').includes('dryRun')).map((e) => `${who(e.user?.username)} ${e.verb} ${code(e)}`);
}

describe('a deposed term\'s held write, released after the next term finished the task', () => {
  it('a deposed leader\'s held pod create lands after the successor finished the attempt: refused, 0 second pods', async () => {
    const runner = 'hc';
    const taskId = 'create-1';
    const name = podName(runner, taskId, 1);
    const { watch, window, a, request, successor, releaseRefused } = await deposedWrite(runner, { taskId, taskType: 'report', ...exits(0, { runMs: 200 }) }, { hold: (req) => req.method === 'POST' && req.path === podsPath() });
    expect(a.mode).toBe('server');
    // A decides the create and sends it: held
    expect(request.body).toMatchObject({ metadata: { name, annotations: { [WRITE_TERM_ANNOTATION]: String(a.term) } } });
    const b = await successor();
    // B ran the attempt, recorded it, had it acknowledged, and deleted its pod: the name is free again
    await waitFor(() => {
      const r = watch.store.get(taskId);
      return (r?.body.state === 'done' && r.writeTerm === b.term && watch.pods.size === 0) || undefined;
    }, 30_000, 'B to finish the task and delete its pod');
    await releaseRefused();
    expect(await admin.core.readNamespacedPod({ namespace, name }).then(() => 'exists', (err: { code?: number }) => err.code)).toBe(404);
    const requests = await audited(window, 'pods', name);
    expect(requests.filter((r) => r.endsWith(' create 201'))).toEqual(['B create 201']);
    expect(requests).toContain('A create 403');
  });

  it('a deposed leader\'s held record update whose resourceVersion still matches: refused by the policy, terminal state kept', async () => {
    // A wrote the attempt's end (finished) in its term and was acknowledged; its `done` write, built on that
    // end's resourceVersion, is held. B hands the end over again (its hand-over never settles, so B writes no
    // record) and lets the pod go: B's writes are to the pod, the record stays at the version A's write was built on.
    const runner = 'hu';
    const taskId = 'update-1';
    const { watch, window, request, successor, releaseRefused } = await deposedWrite(runner, { taskId, taskType: 'report', ...exits(0, { runMs: 200 }) }, { hold: (req) => req.method === 'PUT' && req.path === recordPath(runner, taskId) && stateOf(req) === 'done' });
    const builtOn = (request.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const b = await successor({ acknowledge: false });
    await waitFor(() => (b.delivered.some((s) => s.taskId === taskId) && watch.pods.size === 0 && watch.store.get(taskId)?.resourceVersion === builtOn) || undefined, 30_000, 'B to hand the end over and let the pod go');
    await releaseRefused();
    const stored = (await admin.core.readNamespacedConfigMap({ namespace, name: recordName(runner, taskId) })).metadata!;
    expect(stored.resourceVersion).toBe(builtOn);
    expect(stored.labels?.[TASK_STATE_LABEL]).toBe('finished');
    expect(watch.store.get(taskId)!.body.status).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    expect(await audited(window, 'configmaps', recordName(runner, taskId))).toContain('A update 403');
  });

  it('a deposed leader\'s held tombstone delete (expired on its clock): refused, record kept', async () => {
    // A keeps a done record no time at all (as if its clock ran a day ahead): its delete, with preconditions on
    // the record it wrote, is held. B keeps done records for the default day, so B leaves it untouched.
    const runner = 'ht';
    const taskId = 'tomb-1';
    const { watch, window, a, request, successor, releaseRefused } = await deposedWrite(runner, { taskId, taskType: 'report', ...exits(0, { runMs: 200 }) }, { settings: { retainDoneMs: 0 }, hold: (req) => req.method === 'DELETE' && req.path === recordPath(runner, taskId) });
    const preconditions = (request.body as { preconditions: { resourceVersion: string } }).preconditions;
    const b = await successor();
    // B has synced the task (its first sync publishes the status) and found nothing to do
    await waitFor(() => (b.published.some((s) => s.taskId === taskId) && watch.store.get(taskId)?.resourceVersion === preconditions.resourceVersion) || undefined, 30_000, 'B to take the done task up');
    expect(watch.store.get(taskId)).toMatchObject({ writeTerm: a.term, body: { state: 'done' } });
    await releaseRefused();
    const stored = (await admin.core.readNamespacedConfigMap({ namespace, name: recordName(runner, taskId) })).metadata!;
    expect(stored.resourceVersion).toBe(preconditions.resourceVersion);
    expect(await audited(window, 'configmaps', recordName(runner, taskId))).toContain('A delete 403');
  });

  it('a deposed leader\'s held pod delete: refused', async () => {
    // A task that fails. A's hand-over is never acknowledged; A lets the pod go (released, stamped with its
    // term) and its delete is held. B hands the end over and records it `done`; B keeps failed pods an hour,
    // so it leaves the pod alone: the held delete's preconditions still match.
    const runner = 'hp';
    const taskId = 'pod-1';
    const name = podName(runner, taskId, 1);
    const { watch, window, request, successor, releaseRefused } = await deposedWrite(runner, { taskId, taskType: 'report', ...exits(1, { runMs: 200 }) }, { acknowledge: false, hold: (req) => req.method === 'DELETE' && req.path === `${podsPath()}/${name}` });
    const preconditions = (request.body as { preconditions: { uid: string; resourceVersion: string } }).preconditions;
    const b = await successor({ settings: { keepFailedPodsMs: 3_600_000 } });
    await waitFor(() => {
      const r = watch.store.get(taskId);
      return (r?.body.state === 'done' && r.writeTerm === b.term) || undefined;
    }, 30_000, 'B to record the end done');
    expect(watch.pods.get(name)?.metadata).toMatchObject({ uid: preconditions.uid, resourceVersion: preconditions.resourceVersion });
    await releaseRefused();
    const pod = await admin.core.readNamespacedPod({ namespace, name });
    expect(pod.metadata?.deletionTimestamp).toBeUndefined();
    expect(pod.metadata?.resourceVersion).toBe(preconditions.resourceVersion);
    expect(watch.store.get(taskId)!.body.status).toMatchObject({ phase: 'failed', exitCode: 1 });
    expect(await audited(window, 'pods', name)).toContain('A delete 403');
  });
});

describe('what the policy does not judge', () => {
  // A binding's params are looked up before a policy's matchConditions: with parameterNotFoundAction Deny, only the
  // bindings' object selectors keep a namespace opted in before its first runner started from refusing everyone.
  it('in a fenced namespace with no term Lease yet, an admin\'s plain ConfigMap and pod creates are not judged', async () => {
    const ns = await admin.namespace('fencing-held-nolease', { forPods: true });
    await grantRunner(ns, [ACCOUNT_A]);
    await admin.core.patchNamespace({ name: ns, body: { metadata: { labels: { [FENCING_NAMESPACE_LABEL]: SUITE } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    // the binding judges the namespace: the runner's fenced write finds no param
    const fence = new TermFence({ client: clientAs(ns, ACCOUNT_A), namespace: ns, runner: 'hnone' });
    await waitFor(async () => (await fence.dryRun(undefined)) === 'unseen' || undefined, 30_000, 'the fencing policy to judge the namespace');
    await admin.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'not-a-task' }, data: { a: 'b' } }, dryRun: 'All' });
    await admin.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'not-a-task' }, spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } }, dryRun: 'All' });
  });
});

describe('without the policy', () => {
  it('without the policy the probe reports client-only fencing', async () => {
    // a namespace without the suite's label: no binding judges it
    const ns = await admin.namespace('fencing-held-off', { forPods: true });
    await grantRunner(ns, [ACCOUNT_A]);
    const fence = new TermFence({ client: clientAs(ns, ACCOUNT_A), namespace: ns, runner: 'hoff' });
    expect(await fence.enter()).toEqual({ term: 1, mode: 'client' });
  });
});
