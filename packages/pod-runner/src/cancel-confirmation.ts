import { hasCode } from '@rollcall/core';
import { ResourceWatch } from '@rollcall/kube-client';
import { recordedStatus } from './pod-task.js';
import { type Pod, RUNNER_LABEL } from './pod.js';
import type { PodsApi } from './pods-api.js';
import type { TaskStatus } from './task.js';

/** What became of a pod marked cancelled: a runner recorded an end on it, it went without one, or neither within the bound. */
export type Confirmation = { recorded: Partial<TaskStatus>; pod: Pod } | { gone: Pod } | undefined;

const SILENT = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Follows one pod from `pod`'s resourceVersion (one watch, no polling) until a
 * runner records an end on it (`rollcall.dev/recorded`: only the leading runner
 * writes it, in the patch that lets the pod go), it is deleted, or `waitMs`
 * passes on the client's clock. A watch that ends for good (410 Gone) is answered by one read.
 */
export function awaitRecorded(api: PodsApi, runner: string, pod: Pod, waitMs: number): Promise<Confirmation> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (answer: Confirmation | Error) => {
      if (settled) return;
      settled = true;
      timer.cancel();
      watch.close();
      if (answer instanceof Error) reject(answer);
      else resolve(answer);
    };
    const timer = api.client.clock.setTimeout(() => done(undefined), waitMs);
    const watch = new ResourceWatch<Pod>(
      {
        client: api.client,
        logger: SILENT,
        path: api.path,
        labelSelector: `${RUNNER_LABEL}=${runner}`,
        fieldSelector: `metadata.name=${pod.metadata.name}`,
        context: api.context('watch', pod.metadata.name),
        fromResourceVersion: pod.metadata.resourceVersion ?? '0',
        silenceTimeoutMs: Math.max(waitMs, 1000),
        timeoutSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
      },
      {
        object: (type, object) => {
          const recorded = recordedStatus(object);
          if (recorded) done({ recorded, pod: object });
          else if (type === 'DELETED') done({ gone: object });
        },
        bookmark: () => {},
        ended: () => {
          api.get(pod.metadata.name).then(
            (now) => {
              const recorded = recordedStatus(now);
              if (recorded) done({ recorded, pod: now });
            },
            (err: unknown) => done(hasCode(err, 'NOT_FOUND') ? { gone: pod } : (err as Error)),
          );
        },
      },
    );
  });
}
