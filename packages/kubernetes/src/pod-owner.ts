import type { OwnerReference } from '@rollcall/kube-client';

/**
 * The pod this process runs in, from the downward API (`POD_NAME`,
 * `POD_NAMESPACE`, `POD_UID`) or the `podName` and `podUid` options (a pod in
 * the records' namespace). A member Lease owned by it is removed by the
 * garbage collector as soon as the pod is deleted. Only a pod in the records'
 * namespace can own them; `blockOwnerDeletion` stays false so no extra RBAC is
 * needed.
 */
export function podOwner(namespace: string, options: { podName?: string; podUid?: string } = {}, env: NodeJS.ProcessEnv = process.env): OwnerReference | undefined {
  const name = options.podName ?? env.POD_NAME;
  const uid = options.podUid ?? env.POD_UID;
  // A name from the options names a pod of the records' namespace; one from the environment, a pod of POD_NAMESPACE.
  const podNamespace = options.podName !== undefined ? namespace : env.POD_NAMESPACE;
  if (!name || !uid || podNamespace !== namespace) return undefined;
  return { apiVersion: 'v1', kind: 'Pod', name, uid, controller: false, blockOwnerDeletion: false };
}
