import type { JsonValue } from '@rollcall/core';
import type { ContainerStatus, Pod } from './pod.js';
import type { PendingCause } from './task.js';

/** What a pod says about its task. */
export type PodReading =
  | {
      phase: 'pending';
      cause: PendingCause;
      /** When this cause began, from the pod's own timestamps: its timer counts from here. */
      since: string;
      reason?: string;
      message?: string;
    }
  | { phase: 'running'; startedAt: string }
  | {
      phase: 'succeeded' | 'failed' | 'timed-out' | 'lost';
      reason: string;
      message?: string;
      exitCode?: number;
      terminationMessage?: string;
      result?: JsonValue;
      startedAt?: string;
      finishedAt?: string;
    };

const IMAGE_PULL = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'RegistryUnavailable', 'SignatureValidationFailed']);
const CONTAINER_CONFIG = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'PreStartHookError', 'PostStartHookError']);
/** Waiting reasons that no wait will cure: the task fails at once. */
export const FATAL_WAITING = new Set(['InvalidImageName']);

/** The termination message as JSON when it is JSON (an object, array, number, …), else undefined. */
export function parseResult(message: string | undefined): JsonValue | undefined {
  if (!message) return undefined;
  const text = message.trim();
  if (!/^[[{"\d-]|^(true|false|null)$/.test(text)) return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

function main(pod: Pod): ContainerStatus | undefined {
  const name = pod.spec.containers[0]?.name;
  return pod.status?.containerStatuses?.find((s) => s.name === name);
}

/**
 * Reads a pod: running, one of the pending causes, or how it ended. Deletion is
 * judged by the runner, which knows whether it asked for it. `wallNow` stands in
 * for a timestamp the pod lacks (a pure function of its arguments).
 */
export function readPod(pod: Pod, wallNow: Date = new Date()): PodReading {
  const status = pod.status ?? {};
  const container = main(pod);
  const created = pod.metadata.creationTimestamp ?? wallNow.toISOString();
  if (status.phase === 'Succeeded' || status.phase === 'Failed') {
    const terminated = container?.state?.terminated;
    const terminationMessage = terminated?.message;
    const common = {
      exitCode: terminated?.exitCode,
      terminationMessage,
      result: parseResult(terminationMessage),
      startedAt: terminated?.startedAt ?? status.startTime,
      finishedAt: terminated?.finishedAt ?? wallNow.toISOString(),
    };
    if (status.reason === 'Evicted') return { phase: 'lost', reason: 'Evicted', message: status.message, ...common };
    if (status.reason === 'DeadlineExceeded') return { phase: 'timed-out', reason: 'DeadlineExceeded', message: status.message ?? 'the run timeout passed', ...common };
    if (status.phase === 'Succeeded') return { phase: 'succeeded', reason: terminated?.reason ?? 'Completed', ...common };
    return { phase: 'failed', reason: terminated?.reason ?? status.reason ?? 'Error', message: status.message, ...common };
  }
  if (status.phase === 'Running') return { phase: 'running', startedAt: container?.state?.running?.startedAt ?? status.startTime ?? created };
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return { phase: 'pending', cause: 'unschedulable', since: scheduled.lastTransitionTime ?? created, reason: 'Unschedulable', message: scheduled.message };
  }
  const waiting = container?.state?.waiting;
  // Waiting states carry no timestamp: the kubelet's start of the pod is when the wait began.
  const since = status.startTime ?? (scheduled?.status === 'True' ? scheduled.lastTransitionTime : undefined) ?? created;
  if (waiting?.reason && (IMAGE_PULL.has(waiting.reason) || FATAL_WAITING.has(waiting.reason))) return { phase: 'pending', cause: 'image-pull', since, reason: waiting.reason, message: waiting.message };
  if (waiting?.reason && CONTAINER_CONFIG.has(waiting.reason)) return { phase: 'pending', cause: 'container-config', since, reason: waiting.reason, message: waiting.message };
  if (scheduled?.status === 'True' || pod.spec.nodeName) return { phase: 'pending', cause: 'starting', since: created };
  return { phase: 'pending', cause: 'scheduling', since: created };
}
