import type { ObjectMeta } from '@rollcall/kube-client';

/** The slice of core/v1 Container the runner reads and writes; the rest passes through. */
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  terminationMessagePolicy?: string;
  [field: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  /** Run before the containers; one with `restartPolicy: Always` is a native sidecar that runs beside them. */
  initContainers?: Container[];
  restartPolicy?: string;
  activeDeadlineSeconds?: number;
  /** While any is listed the scheduler leaves the pod alone (Kueue's admission gate, …); removed by whoever set them. */
  schedulingGates?: { name: string }[];
  [field: string]: unknown;
}

/** A pod template: what a PodTemplate object's `template` holds. */
export interface PodTemplateSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode: number; reason?: string; message?: string; startedAt?: string; finishedAt?: string };
}

export interface ContainerStatus {
  name: string;
  state?: ContainerState;
}

/** The slice of core/v1 Pod metadata the runner reads. */

export interface Pod {
  apiVersion?: 'v1';
  kind?: 'Pod';
  metadata: ObjectMeta & { creationTimestamp?: string; deletionTimestamp?: string; deletionGracePeriodSeconds?: number; finalizers?: string[] };
  spec: PodSpec;
  status?: {
    phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    reason?: string;
    message?: string;
    startTime?: string;
    conditions?: PodCondition[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

/** Labels every pod of a runner carries; `rollcall.dev/runner` is the watch's selector. */
export const RUNNER_LABEL = 'rollcall.dev/runner';
export const TASK_ID_LABEL = 'rollcall.dev/task-id';
export const TASK_TYPE_LABEL = 'rollcall.dev/task-type';
/** The name of the container that runs the task (the template rule's `container`, else its first): its termination decides the task, whatever sidecars do. */
export const TASK_CONTAINER_ANNOTATION = 'rollcall.dev/task-container';
/** sha256 of the pod as built, before the fencing token: a 409 adopts only an equal pod. */
export const SPEC_HASH_ANNOTATION = 'rollcall.dev/spec-hash';
/** JSON: the task's id, type, tags, attempt, timeouts, template and submit time, so a runner that restarts knows the task from its pod. */
export const TASK_ANNOTATION = 'rollcall.dev/task';
/** The fencing token of the runner term that created the pod. */
export const FENCING_TOKEN_ANNOTATION = 'rollcall.dev/fencing-token';
/** Set when a runner cancelled the task: the reason. */
export const CANCELLED_ANNOTATION = 'rollcall.dev/cancelled';
/** Set when a runner recorded the final status (JSON), just before it lets the pod go. */
export const RECORDED_ANNOTATION = 'rollcall.dev/recorded';
/** Holds a finished pod until the runner has recorded its status. */
export const FINALIZER = 'rollcall.dev/pod-runner';
