import { daemonPid } from '../../testenv/daemon.js';
import { etcdMetricsCounter } from '../counters/etcd-metrics.js';
import { zookeeperMntrCounter } from '../counters/zookeeper-mntr.js';
import type { KubernetesTarget } from '../backends/kubernetes.js';
import { difference, type RequestTotals, type ServerCounter } from '../scenarios/idle-requests.js';
import { requireTestEnv } from '../../testenv/index.js';
import type { BenchTarget } from '../target.js';
import type { ScaleBackend } from './args.js';
import { processTree, sampleProcesses, type ProcSample } from './proc.js';

/** The test-environment units whose processes are the backend's server: their CPU and RSS are its cost. */
export const SERVER_UNITS: Record<ScaleBackend, readonly string[]> = {
  kubernetes: ['kube-apiserver', 'kubernetes-etcd'],
  etcd: ['etcd'],
  zookeeper: ['zookeeper'],
};

/** The server's processes now (each unit's and its descendants'), summed. */
export function sampleServer(backend: ScaleBackend): ProcSample {
  const pids = SERVER_UNITS[backend].flatMap((unit) => {
    const pid = daemonPid(unit);
    if (pid === undefined) throw new Error(`${unit} is not running`);
    return processTree(pid);
  });
  return sampleProcesses(pids);
}

/** Counts the run's requests over a window. */
export interface RequestWindow {
  source: string;
  /** Starts counting now; the function it resolves with ends the window. */
  start(): Promise<() => Promise<RequestTotals>>;
}

function serverWide(counter: ServerCounter): RequestWindow {
  return {
    source: `${counter.source} (the whole server: run it on a private instance)`,
    async start() {
      const before = await counter.read();
      return async () => {
        const window = difference(await counter.read(), before);
        return { ...window, total: window.total - counter.readCost };
      };
    },
  };
}

/** How each backend's requests are counted; kubernetes only those in the run's namespace. */
export function requestWindow(backend: ScaleBackend, target: BenchTarget): RequestWindow {
  switch (backend) {
    case 'kubernetes': {
      const { audit, namespace } = target as KubernetesTarget;
      return {
        source: `the API server's audit log, requests in namespace ${namespace}`,
        async start() {
          const window = audit.open();
          return () => audit.closeWhere(window, (e) => e.objectRef?.namespace === namespace);
        },
      };
    }
    case 'etcd':
      return serverWide(etcdMetricsCounter(requireTestEnv('etcd').endpoints[0]!));
    case 'zookeeper': {
      const env = requireTestEnv('zookeeper');
      return serverWide(zookeeperMntrCounter(env.host, env.port));
    }
  }
}
