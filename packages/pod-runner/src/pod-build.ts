import { createHash } from 'node:crypto';
import type { Container, Pod, PodTemplateSpec } from './pod.js';
import { FENCING_TOKEN_ANNOTATION, FINALIZER, RUNNER_LABEL, SPEC_HASH_ANNOTATION, TASK_ANNOTATION, TASK_CONTAINER_ANNOTATION, TASK_ID_LABEL, TASK_TYPE_LABEL } from './pod.js';
import type { Task, TaskTimeouts } from './task.js';

const MAX_NAME = 63;

function shortHash(text: string, length = 8): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/**
 * The pod of a task's attempt: `<runner>-<task id>-<attempt>`, lower-cased;
 * when the id had to change to be a DNS label (case, `_`, `.`) or the name would
 * pass 63 characters, a hash of the id keeps distinct ids apart. Deterministic,
 * so a retried create finds the pod it already made.
 */
export function podName(runner: string, taskId: string, attempt: number): string {
  const slug = taskId.toLowerCase().replace(/[_.]/g, '-');
  const plain = `${runner}-${slug}-${attempt}`;
  if (slug === taskId && plain.length <= MAX_NAME) return plain;
  const suffix = `-${shortHash(taskId)}-${attempt}`;
  const room = MAX_NAME - runner.length - 1 - suffix.length;
  return `${runner}-${slug.slice(0, Math.max(1, room)).replace(/-+$/, '')}${suffix}`;
}

/** JSON with sorted keys, so equal objects hash equally whatever order they were built in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What a restarted runner needs to know of a task, from its pod. */
export interface TaskAnnotation {
  taskId: string;
  taskType: string;
  tags: Record<string, string>;
  attempt: number;
  template: string;
  timeouts: TaskTimeouts;
  submittedAt: string;
}

export interface BuildPodInput {
  runner: string;
  namespace: string;
  task: Task;
  template: PodTemplateSpec;
  templateName: string;
  /** The template's container that runs the task; default its first. */
  container?: string;
  submittedAt: string;
  /** The runner term's fencing token, when it runs with a registry. */
  fencingToken?: number;
}

function mainContainer(template: Container, task: Task): Container {
  const container: Container = structuredClone(template);
  if (task.command) container.command = task.command;
  if (task.args) container.args = task.args;
  if (task.env) {
    const names = new Set(Object.keys(task.env));
    container.env = [...(container.env ?? []).filter((e) => !names.has(e.name)), ...Object.entries(task.env).map(([name, value]) => ({ name, value }))];
  }
  if (task.resources) {
    container.resources = {
      requests: { ...container.resources?.requests, ...task.resources.requests },
      limits: { ...container.resources?.limits, ...task.resources.limits },
    };
  }
  // The result travels in the termination message; without a file written, the log tail says why it failed.
  container.terminationMessagePolicy = 'FallbackToLogsOnError';
  return container;
}

/** The pod a task runs in, and its spec hash (over everything but the fencing token). */
export function buildPod(input: BuildPodInput): { pod: Pod; specHash: string } {
  const { task, template } = input;
  const attempt = task.attempt ?? 1;
  const index = Math.max(0, template.spec.containers.findIndex((c) => c.name === input.container));
  const spec = structuredClone(template.spec);
  spec.containers[index] = mainContainer(template.spec.containers[index]!, task);
  const containerName = spec.containers[index]!.name;
  spec.restartPolicy = 'Never';
  if (task.timeouts?.run !== undefined) spec.activeDeadlineSeconds = Math.ceil(task.timeouts.run / 1000);
  const record: TaskAnnotation = {
    taskId: task.taskId,
    taskType: task.taskType,
    tags: task.tags ?? {},
    attempt,
    template: input.templateName,
    timeouts: task.timeouts ?? {},
    submittedAt: input.submittedAt,
  };
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(input.runner, task.taskId, attempt),
      namespace: input.namespace,
      labels: { ...template.metadata?.labels, ...task.labels, [RUNNER_LABEL]: input.runner, [TASK_ID_LABEL]: task.taskId, [TASK_TYPE_LABEL]: task.taskType },
      annotations: { ...template.metadata?.annotations, ...task.annotations, [TASK_ANNOTATION]: JSON.stringify(record), [TASK_CONTAINER_ANNOTATION]: containerName },
      finalizers: [FINALIZER],
    },
    spec,
  };
  // submittedAt differs between two submits of the same task: not part of what "the same pod" means.
  // the task container's name follows from the template: left out, so pods hash as they did before it was recorded
  const specHash = shortHash(canonical({ labels: pod.metadata.labels, annotations: { ...pod.metadata.annotations, [TASK_ANNOTATION]: canonical({ ...record, submittedAt: undefined }), [TASK_CONTAINER_ANNOTATION]: undefined }, spec }), 16);
  pod.metadata.annotations![SPEC_HASH_ANNOTATION] = specHash;
  if (input.fencingToken !== undefined) pod.metadata.annotations![FENCING_TOKEN_ANNOTATION] = String(input.fencingToken);
  return { pod, specHash };
}
