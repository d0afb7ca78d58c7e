import { systemClock, type JsonValue } from '@rollcall/core';
import { type ContainerStatus, type Pod, TASK_CONTAINER_ANNOTATION } from './pod.js';
import type { PendingCause } from '@rollcall/pod-runner-activity';

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
      /** The pod's phase is Unknown: its node stopped reporting. */
      phase: 'unknown';
      reason: string;
      message?: string;
    }
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

export type EndedReading = Extract<PodReading, { phase: 'succeeded' | 'failed' | 'timed-out' | 'lost' }>;

const IMAGE_PULL = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'RegistryUnavailable', 'SignatureValidationFailed']);
const CONTAINER_CONFIG = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'PreStartHookError', 'PostStartHookError']);
/** PodScheduled's reason while a pod has scheduling gates (pkg/apis/core PodReasonSchedulingGated). */
export const SCHEDULING_GATED = 'SchedulingGated';

/**
 * Whether the pod's gates are gone but the scheduler has not looked at it yet:
 * PodScheduled still False/SchedulingGated, as the API server set it at create.
 */
export function justUngated(pod: Pod): boolean {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  return (pod.spec.schedulingGates ?? []).length === 0 && scheduled?.status === 'False' && scheduled.reason === SCHEDULING_GATED;
}

/** Waiting reasons that no wait will cure: the task fails at once. */
export const FATAL_WAITING = new Set(['InvalidImageName']);

/**
 * The most of a container's termination message the kubelet passes on, in bytes:
 * the last 4096 of the file (MaxContainerTerminationMessageLength), and in a pod
 * of more than three containers (init and ephemeral ones counted) only the first
 * 12288 / n of those (MaxPodTerminationMessageLogLength shared out).
 */
export function terminationMessageLimit(pod: Pod): number {
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0) + ((pod.spec.ephemeralContainers as unknown[] | undefined)?.length ?? 0);
  return Math.min(4096, Math.floor(12288 / Math.max(1, containers)));
}

/**
 * The termination message as JSON when it is JSON (an object, array, number, …), else undefined.
 * A message of `limit` bytes or more is never parsed: the kubelet may have cut it, and a cut
 * JSON text can still parse (a long number, a tail that starts at a value).
 */
export function parseResult(message: string | undefined, limit = Infinity): JsonValue | undefined {
  if (!message || Buffer.byteLength(message) >= limit) return undefined;
  const text = message.trim();
  if (!/^[[{"\d-]|^(true|false|null)$/.test(text)) return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

/** The name of the container that runs the task: recorded on the pod when it was built (a sidecar may be listed before it, or injected), else the first. */
export function taskContainerName(pod: Pod): string | undefined {
  return pod.metadata.annotations?.[TASK_CONTAINER_ANNOTATION] ?? pod.spec.containers[0]?.name;
}

/** An init container that ran to completion and failed: with restartPolicy Never, the pod fails with it. Native sidecars (restartPolicy Always) are not init steps. */
function failedInit(pod: Pod): ContainerStatus | undefined {
  const sidecars = new Set((pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  return pod.status?.initContainerStatuses?.find((s) => !sidecars.has(s.name) && s.state?.terminated && s.state.terminated.exitCode !== 0);
}

/**
 * The kubelet's own `status.reason` on a pod it ended (phase Failed), as the
 * runner names it: an eviction by its eviction manager — node pressure, or a
 * pod past its ephemeral-storage limit (`Evicted`, pkg/kubelet/eviction),
 * an eviction to admit a critical pod (`Preempting`, pkg/kubelet/preemption),
 * graceful node shutdown (`Terminated`; `Shutdown` before Kubernetes 1.22,
 * pkg/kubelet/nodeshutdown).
 */
const KUBELET_ENDINGS: Record<string, DisruptionReason> = {
  Evicted: 'EvictedByKubelet',
  Preempting: 'PreemptedByKubelet',
  Terminated: 'NodeShutdown',
  Shutdown: 'NodeShutdown',
};

/** The DisruptionTarget condition's reasons (pkg/apis/core), as the runner names them; the kubelet's is told apart by the pod's `status.reason`. */
const DISRUPTION_TARGETS: Record<string, DisruptionReason> = {
  EvictionByEvictionAPI: 'Evicted',
  PreemptionByScheduler: 'Preempted',
  DeletionByTaintManager: 'TaintManagerEviction',
  DeletionByPodGC: 'PodGarbageCollected',
  TerminationByKubelet: 'TerminatedByKubelet',
};

/** How Kubernetes ended a pod it disrupted, each its own reason; `Deleted` when nothing says more. */
export type DisruptionReason =
  | 'Deleted'
  | 'Evicted'
  | 'Preempted'
  | 'EvictedByKubelet'
  | 'PreemptedByKubelet'
  | 'NodeShutdown'
  | 'TaintManagerEviction'
  | 'PodGarbageCollected'
  | 'TerminatedByKubelet';

/** The pod's DisruptionTarget condition, when True. */
function disruptionTarget(pod: Pod) {
  return pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
}

/**
 * What Kubernetes says ended (or is ending) the pod: the kubelet's
 * `status.reason` on a Failed pod, else the DisruptionTarget condition's
 * reason; undefined when neither says anything. `since` is when the
 * condition was set (the kill's moment), when it was.
 */
export function disruption(pod: Pod): { reason: DisruptionReason; message?: string; since?: string } | undefined {
  const status = pod.status ?? {};
  const target = disruptionTarget(pod);
  const byKubelet = status.phase === 'Failed' && status.reason !== undefined ? KUBELET_ENDINGS[status.reason] : undefined;
  const byTarget = target?.reason !== undefined ? DISRUPTION_TARGETS[target.reason] : undefined;
  const reason = byKubelet ?? byTarget;
  if (!reason) return undefined;
  return { reason, message: (byKubelet ? status.message : undefined) ?? target?.message ?? status.message, since: target?.lastTransitionTime };
}

/**
 * The reason a pod being deleted (or marked for disruption) gives: the
 * disruption's cause when Kubernetes gave one, else `Deleted`.
 */
export function disruptionReason(pod: Pod): DisruptionReason {
  return disruption(pod)?.reason ?? 'Deleted';
}

/** Whether the task container's exit came before Kubernetes marked the pod for disruption: then the exit, not the kill, ended the task. */
function exitedBefore(finishedAt: string | undefined, since: string | undefined): boolean {
  return finishedAt !== undefined && since !== undefined && Date.parse(finishedAt) < Date.parse(since);
}

/**
 * Reads a pod: running, one of the pending causes, Unknown, or how it ended.
 * The task container (found by name) decides: once it terminated, the task
 * ended with its exit code, whatever sidecars still run. The kubelet's own
 * verdicts on the pod come first (DeadlineExceeded; an eviction, a node
 * shutdown, a preemption: {@link disruption}): it writes them before it kills
 * the containers, so an exit after them is the kill's. Deletion is judged by the reconciler, which
 * knows whether the runner asked for it. `wallNow` (default the system
 * clock's) stands in for a timestamp the pod lacks (a pure function of its
 * arguments).
 */
export function readPod(pod: Pod, wallNow: Date = systemClock.wallNow()): PodReading {
  const status = pod.status ?? {};
  const name = taskContainerName(pod);
  const container = status.containerStatuses?.find((s) => s.name === name);
  const created = pod.metadata.creationTimestamp ?? wallNow.toISOString();
  const terminated = container?.state?.terminated;
  const ended = (phase: EndedReading['phase'], reason: string, message?: string): EndedReading => ({
    phase,
    reason,
    message,
    exitCode: terminated?.exitCode,
    terminationMessage: terminated?.message,
    result: parseResult(terminated?.message, terminationMessageLimit(pod)),
    startedAt: terminated?.startedAt ?? status.startTime,
    finishedAt: terminated?.finishedAt ?? wallNow.toISOString(),
  });
  if (status.phase === 'Failed' && status.reason === 'DeadlineExceeded') return ended('timed-out', 'DeadlineExceeded', status.message ?? 'the pod passed its activeDeadlineSeconds');
  // Ended by the kubelet (eviction, node shutdown, preemption) or failed by a controller (pod GC) before the
  // delete: the kill ended the task — a SIGTERM handler may exit 0 — unless its container exited before the mark.
  const disrupted = status.phase === 'Failed' ? disruption(pod) : undefined;
  if (disrupted && !exitedBefore(terminated?.finishedAt, disrupted.since)) return ended('lost', disrupted.reason, disrupted.message);
  if (terminated) {
    if (terminated.exitCode === 0) return ended('succeeded', terminated.reason ?? 'Completed');
    // OOMKilled, Error, ContainerCannotRun, …: the kubelet's reason for the task container
    return ended('failed', terminated.reason ?? 'Error', terminated.reason === 'OOMKilled' ? 'the task container was killed for passing its memory limit' : status.message);
  }
  if (status.phase === 'Failed') {
    const init = failedInit(pod);
    if (init) {
      const t = init.state!.terminated!;
      return ended('failed', 'InitContainerFailed', `init container ${init.name} exited with ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${t.message ? `: ${t.message}` : ''}`);
    }
    return ended('failed', status.reason ?? 'Error', status.message);
  }
  if (status.phase === 'Succeeded') return ended('succeeded', 'Completed');
  if (status.phase === 'Unknown') return { phase: 'unknown', reason: status.reason ?? 'NodeLost', message: status.message ?? 'the pod\'s node stopped reporting its state' };
  const running = container?.state?.running;
  if (running) return { phase: 'running', startedAt: running.startedAt ?? status.startTime ?? created };
  // a pod Running without the task container's status yet (sidecars may run while it waits: judged below)
  if (status.phase === 'Running' && !container?.state?.waiting) return { phase: 'running', startedAt: status.startTime ?? created };
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  // held back by scheduling gates (Kueue's admission, …): the API server sets PodScheduled False/SchedulingGated at create
  const gates = pod.spec.schedulingGates ?? [];
  if (gates.length > 0) {
    const since = (scheduled?.reason === SCHEDULING_GATED ? scheduled.lastTransitionTime : undefined) ?? created;
    return { phase: 'pending', cause: 'gated', since, reason: SCHEDULING_GATED, message: `waiting for its scheduling gates to be removed: ${gates.map((g) => g.name).join(', ')}` };
  }
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return { phase: 'pending', cause: 'unschedulable', since: scheduled.lastTransitionTime ?? created, reason: 'Unschedulable', message: scheduled.message };
  }
  // Waiting states carry no timestamp: the kubelet's start of the pod is when the wait began.
  const since = status.startTime ?? (scheduled?.status === 'True' ? scheduled.lastTransitionTime : undefined) ?? created;
  // an init container (or a native sidecar) that cannot start holds the task container back the same way
  for (const waiting of [container?.state?.waiting, ...(status.initContainerStatuses ?? []).map((s) => s.state?.waiting)]) {
    if (waiting?.reason && (IMAGE_PULL.has(waiting.reason) || FATAL_WAITING.has(waiting.reason))) return { phase: 'pending', cause: 'image-pull', since, reason: waiting.reason, message: waiting.message };
    if (waiting?.reason && CONTAINER_CONFIG.has(waiting.reason)) return { phase: 'pending', cause: 'container-config', since, reason: waiting.reason, message: waiting.message };
  }
  const initialized = status.conditions?.find((c) => c.type === 'Initialized');
  if (initialized?.status === 'False' && (status.initContainerStatuses ?? []).some((s) => s.state?.running)) return { phase: 'pending', cause: 'initializing', since: created };
  if (scheduled?.status === 'True' || pod.spec.nodeName) return { phase: 'pending', cause: 'starting', since: created };
  return { phase: 'pending', cause: 'scheduling', since: created };
}

/**
 * A pod being deleted that the runner did not delete (it records a task before
 * it deletes its pod): how its task ended. An exit after the delete was asked for
 * (`deletionTimestamp` less the grace period) is the kill's doing — a SIGTERM
 * handler may exit 0 — so the task is `lost`, never a success; only an end from
 * before the delete (or the kubelet's own verdict) stands. Undefined when the pod
 * is not being deleted.
 */
export function readDeleted(pod: Pod, reading: PodReading): EndedReading | undefined {
  const deletion = pod.metadata.deletionTimestamp;
  if (!deletion) return undefined;
  const asked = Date.parse(deletion) - (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
  if (reading.phase === 'timed-out' || reading.phase === 'lost') return reading;
  if ((reading.phase === 'succeeded' || reading.phase === 'failed') && reading.finishedAt !== undefined && Date.parse(reading.finishedAt) < asked) return reading;
  return lostByDeletion(pod);
}

/** A task whose pod was deleted before it ended: `lost`, with the disruption's reason when Kubernetes gave one. */
export function lostByDeletion(pod: Pod): { phase: 'lost'; reason: string; message: string } {
  const reason = disruptionReason(pod);
  return { phase: 'lost', reason, message: `pod ${pod.metadata.name} was deleted before it finished${reason === 'Deleted' ? '' : ` (${reason})`}` };
}
