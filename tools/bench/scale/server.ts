import { daemonPid } from '../../testenv/process/daemon.js';
import { etcdMetricsCounter } from '../counters/etcd-metrics.js';
import { zookeeperMntrCounter } from '../counters/zookeeper-mntr.js';
import type { KubernetesTarget } from '../backends/kubernetes.js';
import { difference, type RequestTotals, type ServerCounter } from '../scenarios/idle-requests.js';
import { requireTestEnv } from '../../testenv/index.js';
import type { AuditEvent } from '../../testenv/kube/audit-log.js';
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
  start(): Promise<() => Promise<RequestTotals & MemberWriteCounts>>;
}

/** The writes to member records counted in a window (Kubernetes only): in all, by verb, and how many records were written. */
export interface MemberWriteCounts {
  memberWrites?: number;
  memberWritesByMethod?: Record<string, number>;
  memberWriters?: number;
}

const WRITES = new Set(['create', 'update', 'patch', 'delete']);
/** A member record's or a heartbeat Lease's name (object-names.ts: `<cluster>-member-…`, `<cluster>-heartbeat-…`); an announce probe's (`probe-<i>`) apart. */
const MEMBER_LEASE = /-(member|heartbeat)-/;
const PROBE_LEASE = /-(member|heartbeat)-worker-probe-\d/;

/** A write to a member record or heartbeat Lease, other than an announce probe's: what a member costs the API server at steady state. */
export function isMemberWrite(e: AuditEvent): boolean {
  const name = e.objectRef?.name ?? '';
  return WRITES.has(e.verb) && e.objectRef?.resource === 'leases' && MEMBER_LEASE.test(name) && !PROBE_LEASE.test(name);
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
          return async () => {
            let memberWrites = 0;
            const byMethod: Record<string, number> = {};
            const writers = new Set<string>();
            const totals = await audit.closeWhere(window, (e) => {
              if (e.objectRef?.namespace !== namespace) return false;
              if (isMemberWrite(e)) memberWrites++, (byMethod[e.verb] = (byMethod[e.verb] ?? 0) + 1), writers.add(e.objectRef.name!);
              return true;
            });
            return { ...totals, memberWrites, memberWritesByMethod: byMethod, memberWriters: writers.size };
          };
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
