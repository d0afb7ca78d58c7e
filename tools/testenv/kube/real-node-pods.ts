import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientRequest } from 'node:http';
import https from 'node:https';
import { CoreV1Api, Watch, type KubeConfig, type V1Pod, type V1PodSpec } from '@kubernetes/client-node';
import { requireTestEnv } from '../env/env-file.js';
import type { RealNodeEnv } from '../servers/kubernetes.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../process/server-wait.js';
import { TestenvError } from '../env/errors.js';

/** The instance's real node, from the env file; a clear error when the instance has none. */
export function realNode(): RealNodeEnv {
  const node = requireTestEnv('kubernetes').realNode;
  if (!node) throw new TestenvError('this test environment has no real node: run up with ROLLCALL_TESTENV_REAL_NODE=1 (the real-node suites use REAL_NODE_INSTANCE)');
  return node;
}

/**
 * A pod spec placed on the real node: its nodeSelector, a toleration of its taint, and
 * every container without an image given the runtime image (Node.js and the built
 * workspace packages under /app), never pulled.
 */
export function onRealNode(spec: V1PodSpec): V1PodSpec {
  const node = realNode();
  const placed = (c: V1PodSpec['containers'][number]) => ({ imagePullPolicy: 'Never', ...c, image: c.image ?? node.runtimeImage });
  return {
    ...spec,
    nodeSelector: { ...spec.nodeSelector, [node.label.key]: node.label.value },
    tolerations: [...(spec.tolerations ?? []), { key: node.taint.key, operator: 'Equal', value: node.taint.value, effect: node.taint.effect }],
    containers: spec.containers.map(placed),
    initContainers: spec.initContainers?.map(placed),
  };
}

/** Waits (bounded) until a pod satisfies `condition`, re-reading it; returns it. */
export async function waitForPod(core: CoreV1Api, namespace: string, name: string, what: string, condition: (pod: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  let last: V1Pod | undefined;
  await waitFor(
    async () => {
      last = await core.readNamespacedPod({ name, namespace });
      return condition(last);
    },
    timeoutMs,
    serverWait({ what: `pod ${namespace}/${name}: ${what}`, intervalMs: 100 }),
  ).catch((error: Error) => {
    throw new TestenvError(`${error.message}\nlast status: ${JSON.stringify(last?.status ?? null).slice(0, 2000)}`, { cause: error });
  });
  return last!;
}

/**
 * The host pids of one container of a pod on the real node, from its cgroup (the
 * container id in the pod's status names the cgroup directory).
 */
export function containerPids(pod: V1Pod, container: string): number[] {
  const id = pod.status?.containerStatuses?.find((s) => s.name === container)?.containerID?.replace(/^[a-z]+:\/\//, '');
  if (!id) throw new TestenvError(`pod ${pod.metadata?.name} has no running container ${container}`);
  const root = join('/sys/fs/cgroup/pids', realNode().cgroupRoot);
  const found = findDir(root, id);
  if (!found) throw new TestenvError(`no cgroup of container ${id} under ${root}`);
  return readFileSync(join(found, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
}

function findDir(dir: string, name: string): string | undefined {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    if (entry.name === name) return join(dir, entry.name);
    const found = findDir(join(dir, entry.name), name);
    if (found) return found;
  }
  return undefined;
}

/** Sends a signal to every process of a container (SIGKILL: a crash inside the pod; SIGSTOP: frozen). */
export function signalContainer(pod: V1Pod, container: string, signal: NodeJS.Signals): number[] {
  const pids = containerPids(pod, container);
  for (const pid of pids) process.kill(pid, signal);
  return pids;
}

/** The lines one container (one start of it) wrote, as followed through the API server. */
export interface FollowedLog {
  pod: string;
  /** The container's restart count when it was followed: each start has its own log. */
  start: number;
  lines: string[];
  /** Whether the stream ended (the container exited or the pod went). */
  ended: boolean;
}

/**
 * Follows (`log?follow`) the log of one container of every pod matching `labelSelector`,
 * from each container start's first line: pods already running and pods created later,
 * each restart again. A pod's log is gone with the pod, so a test that judges what
 * processes reported must follow while they run. Watches the pods (a watch the server
 * ends is started again, and relists).
 */
/**
 * Follows one container's log over node:https with the kubeconfig's credentials, handing
 * each chunk's text to `onText` and calling `onEnd` once when it ends or fails; returns
 * the function that stops it. (client-node 2's Log pipes a stream with no error listener:
 * stopping it through its AbortController is an uncaught error.)
 */
function followLog(kc: KubeConfig, namespace: string, pod: string, container: string, onText: (text: string) => void, onEnd: () => void): () => void {
  let request: ClientRequest | undefined;
  let over = false;
  const end = () => {
    if (!over) (over = true), onEnd();
  };
  const server = new URL(kc.getCurrentCluster()!.server);
  const options: https.RequestOptions = {
    method: 'GET',
    hostname: server.hostname,
    port: server.port,
    path: `/api/v1/namespaces/${namespace}/pods/${pod}/log?container=${encodeURIComponent(container)}&follow=true`,
  };
  kc.applyToHTTPSOptions(options).then(
    () => {
      if (over) return;
      request = https.request(options, (res) => {
        if (res.statusCode !== 200) return res.resume(), end();
        res.setEncoding('utf8');
        res.on('data', onText);
        res.on('end', end);
        res.on('error', end);
        res.on('close', end);
      });
      request.on('error', end);
      request.end();
    },
    end,
  );
  return () => {
    request?.destroy();
    end();
  };
}

export function followPodLogs(kc: KubeConfig, namespace: string, labelSelector: string, container: string): { logs: FollowedLog[]; stop: () => void } {
  const watcher = new Watch(kc);
  const logs: FollowedLog[] = [];
  const followed = new Set<string>();
  const stops: (() => void)[] = [];
  let stopped = false;
  let watch: AbortController | undefined;
  // Each container start is one log: a pod's running container, seen once per restart count.
  const seen = (pod: V1Pod) => {
    const status = pod.status?.containerStatuses?.find((s) => s.name === container);
    if (!status?.state?.running) return;
    const key = `${pod.metadata!.uid}/${status.restartCount}`;
    if (followed.has(key)) return;
    followed.add(key);
    const entry: FollowedLog = { pod: pod.metadata!.name!, start: status.restartCount, lines: [], ended: false };
    logs.push(entry);
    let partial = '';
    const stop = followLog(kc, namespace, entry.pod, container, (text) => {
      const parts = (partial + text).split('\n');
      partial = parts.pop()!;
      entry.lines.push(...parts);
    }, () => (entry.ended = true));
    if (stopped) stop();
    else stops.push(stop);
  };
  // A watch from now (its first events are every pod that exists), started again whenever the server ends it.
  let restarting = false;
  const again = () => {
    if (restarting || stopped) return;
    restarting = true;
    setTimeout(() => ((restarting = false), start()), 100);
  };
  const start = () => {
    if (stopped) return;
    watcher
      .watch(`/api/v1/namespaces/${namespace}/pods`, { labelSelector }, (type: string, pod: V1Pod) => type !== 'DELETED' && seen(pod), again)
      .then((abort) => (stopped ? abort.abort() : (watch = abort)))
      .catch(again);
  };
  start();
  return {
    logs,
    stop: () => {
      stopped = true;
      watch?.abort();
      for (const stop of stops) stop();
    },
  };
}
