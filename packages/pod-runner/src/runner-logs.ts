import { type Logger, StoreConflictError } from '@rollcall/core';
import type { ApiClient } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import type { LogCapture } from './log-capture.js';
import { type LogLine, type LogOptions, logStream } from './logs.js';
import { taskContainerName } from './pod-status.js';
import type { Pod } from './pod.js';
import { isTerminal, type TaskStatus } from './task.js';

/** What {@link readTaskLog} reads from. */
export interface TaskLogRead {
  client: ApiClient;
  logger: Logger;
  namespace: string;
  capture: LogCapture | undefined;
  /** The task's status when the read was asked. */
  status: TaskStatus;
  /** Its pod, as the leader's informer holds it; undefined on a follower or when gone. */
  pod: Pod | undefined;
  options: LogOptions;
  /** The template rule's task container: used when the pod is not at hand. */
  ruleContainer: string;
  /** The task's status now. */
  current(): TaskStatus;
  /** Its status changes from now on, starting with the current one. */
  changes(): AsyncIterableIterator<TaskStatus>;
}

/**
 * One task's log for `PodRunner.logs`: the captured copy (which outlives the
 * pod) when followed, or once the task ended or its pod is gone; a read of a
 * running task is the kubelet's. A container that has not started has no log
 * yet: a follower waits for it. NOT_FOUND when there is neither a pod nor a copy.
 */
export function readTaskLog(read: TaskLogRead): AsyncIterableIterator<LogLine> {
  const { status, pod, options, capture } = read;
  const notStarted = status.phase === 'queued' || status.phase === 'pending';
  const started = options.follow && notStarted ? untilStarted(read.changes()) : undefined;
  const container = (pod && taskContainerName(pod)) ?? read.ruleContainer;
  const ended = () => isTerminal(read.current());
  const fromPod = () => logStream({ client: read.client, logger: read.logger, namespace: read.namespace, podName: () => read.current().podName, container: options.container ?? container, options, started, ended });
  const captured = capture && (options.container === undefined || options.container === container);
  if (captured && (options.follow || !pod || isTerminal(status))) return capture.read(status, options, started, ended, pod ? fromPod : undefined);
  if (!pod && isTerminal(status)) throw new StoreConflictError('NOT_FOUND', `task ${status.taskId} has no pod any more: no log to read`, { backend: BACKEND });
  return fromPod();
}

/** Resolves once the task's status leaves queued and pending (its container started, or it ended). */
async function untilStarted(changes: AsyncIterableIterator<TaskStatus>): Promise<void> {
  for await (const status of changes) if (status.phase !== 'queued' && status.phase !== 'pending') return;
}
