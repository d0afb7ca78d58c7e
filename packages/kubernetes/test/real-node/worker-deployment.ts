import type { V1Deployment, V1EnvVar } from '@kubernetes/client-node';
import { onRealNode } from '@rollcall/tools/testenv';

/** The label every pod of a {@link workerDeployment} carries, for following their logs. */
export const WORKER_POD_LABEL = 'rollcall.test/worker';

/**
 * A Deployment of the quick start's process (examples/worker.mjs in the runtime image)
 * on the real node: `registry.type=kubernetes` from REGISTRY_* variables, in-cluster
 * credentials of `serviceAccount`, pod name and uid from the downward API, the
 * readiness probe, a rolling update that surges one pod and keeps all available.
 */
export function workerDeployment(options: { name: string; role: string; serviceAccount: string; replicas: number; cluster: string; env?: V1EnvVar[] }): V1Deployment {
  const field = (path: string) => ({ valueFrom: { fieldRef: { fieldPath: path } } });
  return {
    metadata: { name: options.name },
    spec: {
      replicas: options.replicas,
      selector: { matchLabels: { app: options.name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: { app: options.name, [WORKER_POD_LABEL]: 'yes' } },
        spec: onRealNode({
          serviceAccountName: options.serviceAccount,
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'main',
              command: ['node', 'worker.mjs'],
              env: [
                { name: 'ROLE', value: options.role },
                { name: 'REGISTRY_TYPE', value: 'kubernetes' },
                { name: 'REGISTRY_CLUSTER', value: options.cluster },
                { name: 'POD_NAME', ...field('metadata.name') },
                { name: 'POD_NAMESPACE', ...field('metadata.namespace') },
                { name: 'POD_UID', ...field('metadata.uid') },
                ...(options.env ?? []),
              ],
              readinessProbe: { httpGet: { path: '/readyz', port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        }),
      },
    },
  };
}
