import { pauseDaemon, resumeDaemon, daemonPid } from '../../process/daemon.js';
import { startUnits, stopUnits, type Unit } from '../../process/unit.js';
import { TestenvError } from '../../env/errors.js';
import type { Compaction } from '../server.js';
import { etcdCompact, etcdDelete, etcdPut } from '../etcd/gateway.js';
import { port } from './layout.js';
import { waitForWatchCachesPast } from './watch-cache.js';

/** How long kube-apiserver's watch caches may take to relist after the compaction. */
const WATCH_CACHE_TIMEOUT_MS = 60_000;

/** Written (then deleted) to move etcd's revision past what kube-apiserver's watches had seen; outside /registry, so no API object. */
const SCRATCH_KEY = '/rollcall-testenv/compaction';

/**
 * Compacts the API server's own etcd (`etcd`, its unit), and makes kube-apiserver's watch
 * caches relist, which compaction alone never does (they serve watches from memory). For that
 * kube-apiserver must lose its etcd connection and find, when it resumes its watches, that
 * their revisions are compacted: etcd is stopped, kube-apiserver frozen (SIGSTOP) so it
 * cannot resume early, etcd started, two writes and the compaction made, kube-apiserver
 * let go. It resolves when the Lease and ConfigMap watch caches answer 410 from below the
 * compaction. Clients see kube-apiserver unavailable for a second or two.
 */
export async function compactKubernetes(etcd: Unit): Promise<Compaction> {
  for (const unit of [etcd.name, 'kube-apiserver']) {
    if (daemonPid(unit) === undefined) throw new TestenvError(`kubernetes is not running (unit ${unit}): run \`npm run testenv -- up kubernetes\``);
  }
  const endpoint = `http://127.0.0.1:${port('kubernetesEtcdClient')}`;
  let revision: number;
  // SIGKILL: a graceful stop waits about 7 s for kube-apiserver's watch streams to drain,
  // which they never do; etcd's write-ahead log makes a crash lose nothing acknowledged.
  await stopUnits([etcd], { signal: 'SIGKILL' });
  await pauseDaemon('kube-apiserver');
  try {
    await startUnits([etcd]);
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
