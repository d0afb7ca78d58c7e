import { port } from './ports.js';
import { daemonPid, pauseDaemon, resumeDaemon } from './daemon.js';
import { etcdCompact, etcdDelete, etcdPut, etcdRevision } from './etcd-gateway.js';
import { startServer, stopServer } from './faults.js';
import { waitForWatchCachesPast } from './servers/kubernetes/watch-cache.js';
import { TestenvError } from './errors.js';

/** The servers whose change history `compactServer` can discard. */
export type CompactableServer = 'etcd' | 'kubernetes';

export interface Compaction {
  /** Every revision (on Kubernetes: resourceVersion) below this one is gone. */
  revision: number;
}

/** How long kube-apiserver's watch caches may take to relist after the compaction. */
const WATCH_CACHE_TIMEOUT_MS = 60_000;

/** Written (then deleted) to move etcd's revision past what kube-apiserver's watches had seen; outside /registry, so no API object. */
const SCRATCH_KEY = '/rollcall-testenv/compaction';

function requireRunning(unit: string, server: CompactableServer): void {
  if (daemonPid(unit) === undefined) throw new TestenvError(`${server} is not running (unit ${unit}): run \`npm run testenv -- up ${server}\``);
}

/**
 * Discards a server's change history up to now, so that a watch from any earlier
 * revision ends with "too old" (etcd: compacted; Kubernetes: 410 Gone). Resolves once that
 * holds, with the revision below which everything is gone.
 *
 * - `etcd`: compacts the test etcd at its current revision (physically: done when it resolves).
 * - `kubernetes`: compacts the API server's own etcd, and makes kube-apiserver's watch caches
 *   relist, which compaction alone never does (they serve watches from memory). For that
 *   kube-apiserver must lose its etcd connection and find, when it resumes its watches, that
 *   their revisions are compacted: etcd is stopped, kube-apiserver frozen (SIGSTOP) so it
 *   cannot resume early, etcd started, two writes and the compaction made, kube-apiserver
 *   let go. It resolves when the Lease and ConfigMap watch caches answer 410 from below the
 *   compaction. Clients see kube-apiserver unavailable for a second or two.
 */
export async function compactServer(name: CompactableServer): Promise<Compaction> {
  if (name === 'etcd') {
    requireRunning('etcd', name);
    const endpoint = `http://127.0.0.1:${port('etcdClient')}`;
    const revision = await etcdRevision(endpoint);
    await etcdCompact(endpoint, revision);
    return { revision };
  }
  if (name === 'kubernetes') {
    requireRunning('kubernetes-etcd', name);
    requireRunning('kube-apiserver', name);
    const endpoint = `http://127.0.0.1:${port('kubernetesEtcdClient')}`;
    let revision: number;
    // SIGKILL: a graceful stop waits about 7 s for kube-apiserver's watch streams to drain,
    // which they never do; etcd's write-ahead log makes a crash lose nothing acknowledged.
    await stopServer('kubernetes-etcd', { signal: 'SIGKILL' });
    await pauseDaemon('kube-apiserver');
    try {
      await startServer('kubernetes-etcd');
      // A watch resumes from one past the last revision it saw, and etcd still serves the
      // compaction revision itself: two writes put that resume point below the compaction.
      await etcdPut(endpoint, SCRATCH_KEY, 'compaction');
      revision = await etcdDelete(endpoint, SCRATCH_KEY);
      await etcdCompact(endpoint, revision);
    } finally {
      resumeDaemon('kube-apiserver');
    }
    await waitForWatchCachesPast(revision - 1, WATCH_CACHE_TIMEOUT_MS);
    return { revision };
  }
  throw new TestenvError(`cannot compact "${String(name)}": only etcd and kubernetes keep a change history to compact`);
}
