import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../../process/server-wait.js';
import { adminRequest } from './admin-client.js';

/** The collections Rollcall keeps records in; their watch caches are the ones checked. */
const RECORD_COLLECTIONS = ['/apis/coordination.k8s.io/v1/leases', '/api/v1/configmaps'];

/** Matches no object, so a watch that is served streams nothing. */
const NO_OBJECTS = 'rollcall-testenv-probe=none';

/** True when the API server answers a watch of `collection` from `resourceVersion` with 410 Gone. */
async function watchIsGone(collection: string, resourceVersion: number): Promise<boolean> {
  const query = new URLSearchParams({ watch: '1', resourceVersion: String(resourceVersion), labelSelector: NO_OBJECTS, timeoutSeconds: '1' });
  const res = await adminRequest('GET', `${collection}?${query}`);
  // The watch cache answers 200 with one ERROR event; a cache still (re)initializing answers 429.
  if (res.status !== 200) return false;
  const first = res.body.split('\n', 1)[0];
  if (!first) return false;
  const event = JSON.parse(first) as { type?: string; object?: { code?: number } };
  return event.type === 'ERROR' && event.object?.code === 410;
}

/**
 * Waits (bounded) until kube-apiserver's watch caches of Leases and ConfigMaps answer a
 * watch from `resourceVersion` with 410 Gone, i.e. they have relisted since then.
 *
 * kube-apiserver serves every watch that names a resourceVersion from its watch cache,
 * never from etcd: the cache answers 410 only for a version before its own window, which
 * starts at its last relist (kube-apiserver's start, for a fresh server often revision 1)
 * and moves only when events older than 75 s are evicted from a full buffer. Compacting
 * etcd does not touch that window; a cache relists when its own etcd watch fails, e.g.
 * because it resumes from a compacted revision.
 */
export async function waitForWatchCachesPast(resourceVersion: number, timeoutMs: number): Promise<void> {
  await waitFor(async () => (await Promise.all(RECORD_COLLECTIONS.map((c) => watchIsGone(c, resourceVersion)))).every(Boolean), timeoutMs, serverWait({ what: `kube-apiserver's watch caches of ${RECORD_COLLECTIONS.join(' and ')} to answer 410 Gone from resourceVersion ${resourceVersion}`, intervalMs: 100 }));
}
