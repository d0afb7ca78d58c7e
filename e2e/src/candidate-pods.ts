import { mkdirSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import { KubeAdmin, onRealNode, waitForPod } from '@rollcall/tools/testenv';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import type { CandidateHandle, CandidateRunner, EventSink } from './candidate-handle.js';
import { candidateEntry } from './candidate-process.js';
import { CANDIDATE_CONTAINER, CandidatePod } from './candidate-pod.js';
import { soakBackend, type Address } from './backends.js';
import type { Placement } from './cluster.js';
import { CHANNEL_VARIABLE, SPEC_VARIABLE, type CandidateSpec } from './protocol.js';

/** The port of the readiness probe each candidate serves (see CandidateSpec.probePort). */
export const PROBE_PORT = 8080;
/** The port in each pod where the candidate's relay to its proxy listens (see CandidateSpec.relay). */
const RELAY_PORT = 6443;
/** The service account's files in a pod. */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The label on every candidate pod: the headless Service's selector. */
const RUN_LABEL = 'rollcall.test/soak';
/** Bound on a candidate's container (re)starting and connecting back, milliseconds: the kubelet's restart back-off included. */
const CONNECT_BOUND_MS = 90_000;

/** A change of a candidate pod's Ready condition, as the coordinator's pod watch saw it (CLOCK_MONOTONIC ms). */
export interface ReadinessChange {
  ready: boolean;
  at: number;
}

/**
 * The soak's candidates as pods on the real node, in pod liveness
 * (`registry.member.liveness=pod`), shaped as the quick start's Deployment
 * (packages/kubernetes/test/real-node/worker-deployment.ts): in-cluster
 * credentials of the `rollcall-coordinator` ServiceAccount (it campaigns and
 * locks) with read access to the role's EndpointSlices, POD_NAME, POD_NAMESPACE
 * and POD_UID from the downward API, the registry's readiness probe, and the
 * headless Service `rollcall-candidate` the role's readers watch. One bare pod
 * per candidate, `restartPolicy: OnFailure`: a SIGKILLed candidate comes back
 * in the same pod (its next incarnation), one that shut down stays down.
 *
 * Pods reach no address of the host, so the coordinator's side of everything is
 * a unix socket in a directory mounted into each pod (hostPath): each
 * candidate's channel (`<name>.sock`, which it connects back to) and the fenced
 * resource (`resource.sock`). The candidate runs from this checkout's build,
 * mounted read-only at its own path, on the runtime image's Node.js.
 */
export class CandidatePods implements CandidateRunner {
  /** Every candidate pod's Ready changes, by candidate name (the pod's name), from the first observed state. */
  readonly readiness = new Map<string, ReadinessChange[]>();
  private readonly servers = new Map<string, { server: Server; waiting: Socket[]; wake: (() => void) | undefined }>();
  private readonly pods = new Set<CandidatePod>();
  /** Each candidate's bridge from `<name>-api.sock` to its proxy. */
  private readonly bridges = new Map<string, Server>();
  private stopWatch: AbortController | undefined;
  private closed = false;

  private constructor(
    private readonly admin: KubeAdmin,
    readonly namespace: string,
    private readonly socketDir: string,
    private readonly runId: string,
  ) {}

  /** A namespace with the Roles, the Service and the pod watch, for candidates whose sockets go in `workDir`. */
  static async start(workDir: string): Promise<CandidatePods> {
    const admin = new KubeAdmin();
    const namespace = await admin.namespace('podsoak', { forPods: true });
    const socketDir = join(workDir, 'sockets');
    mkdirSync(socketDir, { recursive: true });
    const pods = new CandidatePods(admin, namespace, socketDir, namespace);
    try {
      await admin.applyManifest('rollcall-coordinator.yaml', namespace);
      await admin.applyManifest('rollcall-pod-liveness.yaml', namespace);
      await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-candidate' }, spec: { clusterIP: 'None', selector: { [RUN_LABEL]: pods.runId }, ports: [{ name: 'probe', port: PROBE_PORT }] } } });
      await pods.watchReadiness();
    } catch (err) {
      await pods.close();
      throw err;
    }
    return pods;
  }

  /** The fenced resource's socket path, reachable from the pods. */
  get resourcePath(): string {
    return join(this.socketDir, 'resource.sock');
  }

  /**
   * Where the candidates' registries point, in pod liveness: the Kubernetes API
   * with the pod's service-account token and CA, through the candidate's relay
   * (127.0.0.1:RELAY_PORT in its pod), `<name>-api.sock` and the TCP proxy the
   * cluster keeps for it, which the `cut` fault cuts.
   */
  get placement(): Placement {
    return {
      backends: [soakBackend('kubernetes')],
      registry: (name, _incarnation, vias) => {
        this.bridge(name, vias.get('kubernetes')!);
        const kubeconfig = join(this.socketDir, `${name}.kubeconfig`);
        writeFileSync(
          kubeconfig,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Config',
            clusters: [{ name: 'relay', cluster: { server: `https://127.0.0.1:${RELAY_PORT}`, 'certificate-authority': `${SERVICE_ACCOUNT_DIR}/ca.crt` } }],
            users: [{ name: 'pod', user: { 'token-file': `${SERVICE_ACCOUNT_DIR}/token` } }],
            contexts: [{ name: 'relay', context: { cluster: 'relay', user: 'pod', namespace: this.namespace } }],
            'current-context': 'relay',
          }),
        );
        return { type: 'kubernetes', kubernetes: { namespace: this.namespace, kubeconfig }, member: { liveness: 'pod' } };
      },
    };
  }

  async start(given: CandidateSpec, logFile: string, onEvent: EventSink): Promise<CandidateHandle> {
    const spec: CandidateSpec = { ...given, relay: { port: RELAY_PORT, socketPath: join(this.socketDir, `${given.name}-api.sock`) } };
    const slot = await this.serverOf(spec.name);
    // The first incarnation is the pod's first start; every later one the kubelet's restart after a SIGKILL.
    if (spec.incarnation === 1) await this.admin.core.createNamespacedPod({ namespace: this.namespace, body: this.podOf(spec) });
    const socket = await this.nextConnection(spec.name, slot);
    const pod = await waitForPod(this.admin.core, this.namespace, spec.name, `container ${CANDIDATE_CONTAINER} running`, (p) => containerOf(p)?.state?.running !== undefined && !this.startedBefore(spec.name, containerOf(p)!.containerID));
    const candidate = new CandidatePod(spec, socket, pod, logFile, onEvent, (p) => this.readExit(p));
    this.pods.add(candidate);
    candidate.init({ incarnation: spec.incarnation });
    return candidate;
  }

  /** Waits for every ended start's exit, keeps the candidates' logs, stops the watch, deletes the namespace and closes the sockets. */
  async close(): Promise<void> {
    await Promise.all([...this.pods].filter((p) => !p.alive).map((p) => p.settle()));
    this.closed = true;
    this.stopWatch?.abort();
    await this.keepLogs();
    await this.admin.core.deleteNamespace({ name: this.namespace }).catch(() => undefined);
    await Promise.all([...this.servers.values()].map(({ server, waiting }) => (waiting.forEach((s) => s.destroy()), new Promise<void>((resolve) => server.close(() => resolve())))));
    await Promise.all([...this.bridges.values()].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }

  /** `<name>-api.sock`, piped to the candidate's proxy at `via` (once per candidate; it listens before the pod starts). */
  private bridge(name: string, via: Address): void {
    if (this.bridges.has(name)) return;
    const server = createServer((pod) => {
      const proxy = createConnection(via.port, via.host);
      const drop = () => (pod.destroy(), proxy.destroy());
      pod.on('error', drop).on('close', drop);
      proxy.on('error', drop).on('close', drop);
      pod.pipe(proxy).pipe(pod);
    });
    server.listen(join(this.socketDir, `${name}-api.sock`));
    this.bridges.set(name, server);
  }

  /**
   * A pod's log goes with it: each candidate's stderr (the registry's warnings)
   * from its last start and the one before (all the kubelet keeps), to each
   * incarnation's log file, before the namespace is deleted.
   */
  private async keepLogs(): Promise<void> {
    const last = new Map<string, CandidatePod[]>();
    for (const p of this.pods) last.set(p.name, [...(last.get(p.name) ?? []), p].sort((a, b) => b.record.incarnation - a.record.incarnation));
    for (const [name, starts] of last) {
      for (const [i, p] of starts.slice(0, 2).entries()) {
        const log = await this.admin.core.readNamespacedPodLog({ name, namespace: this.namespace, container: CANDIDATE_CONTAINER, previous: i === 1 }).catch((err: unknown) => `(no log: ${(err as Error).message})\n`);
        writeFileSync(p.record.logFile, log);
      }
    }
  }

  private startedBefore(name: string, containerId: string | undefined): boolean {
    return [...this.pods].some((p) => p.name === name && p.containerId === containerId);
  }

  private podOf(spec: CandidateSpec): V1Pod {
    const field = (path: string) => ({ valueFrom: { fieldRef: { fieldPath: path } } });
    // The checkout: <root>/e2e/dist/candidate.js, and the node_modules it resolves from.
    const root = resolve(candidateEntry(), '..', '..', '..');
    return {
      metadata: { name: spec.name, labels: { [RUN_LABEL]: this.runId } },
      spec: onRealNode({
        serviceAccountName: 'rollcall-coordinator',
        restartPolicy: 'OnFailure',
        terminationGracePeriodSeconds: 5,
        containers: [
          {
            name: CANDIDATE_CONTAINER,
            command: ['node', candidateEntry()],
            env: [
              { name: SPEC_VARIABLE, value: JSON.stringify(spec) },
              { name: CHANNEL_VARIABLE, value: join(this.socketDir, `${spec.name}.sock`) },
              { name: 'POD_NAME', ...field('metadata.name') },
              { name: 'POD_NAMESPACE', ...field('metadata.namespace') },
              { name: 'POD_UID', ...field('metadata.uid') },
            ],
            volumeMounts: [
              { name: 'build', mountPath: root, readOnly: true },
              { name: 'sockets', mountPath: this.socketDir },
            ],
            readinessProbe: { httpGet: { path: '/readyz', port: PROBE_PORT }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
        volumes: [
          { name: 'build', hostPath: { path: root, type: 'Directory' } },
          { name: 'sockets', hostPath: { path: this.socketDir, type: 'Directory' } },
        ],
      }),
    };
  }

  private async serverOf(name: string) {
    const existing = this.servers.get(name);
    if (existing) return existing;
    const slot = { server: undefined as unknown as Server, waiting: [] as Socket[], wake: undefined as (() => void) | undefined };
    slot.server = createServer((socket) => {
      // A SIGKILLed candidate resets its end: that is the kill, and the close tells it.
      socket.on('error', () => {});
      slot.waiting.push(socket);
      slot.wake?.();
    });
    await new Promise<void>((resolve) => slot.server.listen(join(this.socketDir, `${name}.sock`), resolve));
    this.servers.set(name, slot);
    return slot;
  }

  private nextConnection(name: string, slot: { waiting: Socket[]; wake: (() => void) | undefined }): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const take = () => {
        const socket = slot.waiting.shift();
        if (!socket) return;
        clearTimeout(timer);
        slot.wake = undefined;
        resolve(socket);
      };
      const timer = setTimeout(() => {
        slot.wake = undefined;
        reject(new Error(`candidate ${name} did not connect back within ${CONNECT_BOUND_MS} ms (pod ${this.namespace}/${name})`));
      }, CONNECT_BOUND_MS);
      slot.wake = take;
      take();
    });
  }

  /** The exit of the start `pod` was read during, once the kubelet has recorded it. */
  private async readExit(pod: V1Pod): Promise<{ code: number | null; signal: string | null }> {
    const id = containerOf(pod)?.containerID;
    const ended = (p: V1Pod) => {
      const c = containerOf(p);
      if (c?.containerID === id) return c?.state?.terminated;
      return c?.lastState?.terminated?.containerID === id ? c?.lastState?.terminated : undefined;
    };
    try {
      const after = await waitForPod(this.admin.core, this.namespace, pod.metadata!.name!, `container ${id} terminated`, (p) => ended(p) !== undefined, 30_000);
      const terminated = ended(after)!;
      return { code: terminated.exitCode, signal: terminated.signal === undefined ? null : String(terminated.signal) };
    } catch {
      return { code: null, signal: null };
    }
  }

  /**
   * Records each candidate pod's Ready changes. client-node 2's Watch ends a stream that
   * was silent for 30 s (its inactivity timeout): a watch that ended while the run goes on
   * is started again, and its first events (every pod, as ADDED) add only what changed.
   */
  private async watchReadiness(): Promise<void> {
    if (this.closed) return;
    const watch = new Watch(this.admin.kc);
    this.stopWatch = await watch.watch(
      `/api/v1/namespaces/${this.namespace}/pods`,
      { labelSelector: `${RUN_LABEL}=${this.runId}` },
      (_phase, pod: V1Pod) => {
        const name = pod.metadata!.name!;
        const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        const changes = this.readiness.get(name) ?? [];
        if (changes.at(-1)?.ready !== ready) changes.push({ ready, at: monotonicMs() });
        this.readiness.set(name, changes);
      },
      (err: unknown) => {
        if (this.closed) return;
        // at once after a quiet end; after a failure, a moment later (the API server may be restarting)
        setTimeout(() => void this.watchReadiness().catch(() => {}), err ? 1_000 : 0).unref();
      },
    );
  }
}

const containerOf = (pod: V1Pod) => pod.status?.containerStatuses?.find((c) => c.name === CANDIDATE_CONTAINER);
