import type { OwnerReference } from './codec.js';

/**
 * The pod this process runs in, from the downward API (`POD_NAME`,
 * `POD_NAMESPACE`, `POD_UID`). A member Lease owned by it is removed by the
 * garbage collector as soon as the pod is deleted. Only a pod in the records'
 * namespace can own them; `blockOwnerDeletion` stays false so no extra RBAC is
 * needed.
 */
export function podOwner(namespace: string, env: NodeJS.ProcessEnv = process.env): OwnerReference | undefined {
  const { POD_NAME: name, POD_NAMESPACE: podNamespace, POD_UID: uid } = env;
  if (!name || !uid || podNamespace !== namespace) return undefined;
  return { apiVersion: 'v1', kind: 'Pod', name, uid, controller: false, blockOwnerDeletion: false };
}
