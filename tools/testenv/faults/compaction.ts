import { resolveTarget } from '../catalog.js';
import type { ServerName } from '../catalog.js';
import { TestenvError } from '../env/errors.js';
import type { Compaction } from '../servers/server.js';

export type { Compaction } from '../servers/server.js';

/** The servers whose change history `compactServer` can discard: those whose descriptor has `compact`. */
export type CompactableServer = ServerName;

/**
 * Discards a server's change history up to now, so that a watch from any earlier
 * revision ends with "too old" (etcd: compacted; Kubernetes: 410 Gone). Resolves once that
 * holds, with the revision below which everything is gone. What it takes is the server's
 * own (its descriptor's `compact`): etcd compacts at its current revision; Kubernetes
 * compacts its own etcd and makes kube-apiserver's watch caches relist past it.
 */
export async function compactServer(name: CompactableServer): Promise<Compaction> {
  const { server, wholeServer } = resolveTarget(name);
  if (!wholeServer || !server.compact) throw new TestenvError(`cannot compact "${String(name)}": it keeps no change history to compact`);
  return server.compact();
}
