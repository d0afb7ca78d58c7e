import { podAttempt } from './decide.js';
import { containerStarted, type LogCapture } from './log-capture.js';
import { taskContainerName } from './pod-status.js';
import type { Pod } from './pod.js';
import type { TaskRecord } from './task-record.js';
import type { TaskStore } from './task-store.js';
import type { TaskStatus } from './task.js';

/** What {@link TermLogs} takes. */
export interface TermLogsOptions {
  /** The runner's capture (one per process: its sink is read by followers too); undefined when logs are not captured. */
  capture: LogCapture | undefined;
  store: TaskStore;
  /** Asks for a sync of the task: a capture drained lets its pod go. */
  enqueue(taskId: string): void;
}

/** The capture's key and stream of a pod: its task, its attempt, its name (what LogCapture reads of a status). */
const attemptOf = (taskId: string, pod: Pod) => ({ taskId, attempt: podAttempt(pod), podName: pod.metadata.name }) as TaskStatus;

function terminated(pod: Pod): boolean {
  const container = taskContainerName(pod) ?? '';
  return pod.status?.containerStatuses?.find((c) => c.name === container)?.state?.terminated !== undefined;
}

/**
 * A term's log captures, on the runner's {@link LogCapture}: the pod of a
 * queued record's current attempt is captured once its container started
 * (a pod seen first when it has ended is read whole); a pod whose capture this
 * term started may be deleted only once its container's last lines are stored
 * (`decide`'s `logsStored`, its `followLogs` action drains it). A pod still
 * running when it is let go (a cancel, a timeout) is deleted at once: the
 * capture follows it to its exit.
 */
export class TermLogs {
  /** Pods whose capture this term started. */
  private readonly captured = new Set<string>();
  private readonly draining = new Set<string>();
  private readonly stored = new Set<string>();

  constructor(private readonly options: TermLogsOptions) {}

  /** The sync saw the task's pods: the current attempt's is captured once it started; an ended one's capture reads what is left. */
  seen(record: TaskRecord, pods: readonly Pod[]): void {
    const capture = this.options.capture;
    if (!capture) return;
    const { taskId, attempt } = record.body.task;
    for (const pod of pods) {
      const current = record.body.state === 'queued' && podAttempt(pod) === (attempt ?? 1);
      const container = taskContainerName(pod) ?? '';
      if (current && containerStarted(pod, container)) this.captured.add(pod.metadata.name);
      capture.observe(attemptOf(taskId, pod), pod, container, current, () => this.ended(taskId, podAttempt(pod)));
    }
  }

  /** `decide`'s `followLogs`: a running pod is captured (see {@link seen}); an ended one's capture is drained, then the task synced again. */
  follow(record: TaskRecord, pod: Pod): void {
    const capture = this.options.capture;
    const name = pod.metadata.name;
    this.seen(record, [pod]);
    if (!capture || !terminated(pod) || !this.captured.has(name) || this.stored.has(name) || this.draining.has(name)) return;
    this.draining.add(name);
    const taskId = record.body.task.taskId;
    void capture.untilLogged(attemptOf(taskId, pod), pod).then(() => {
      this.draining.delete(name);
      this.stored.add(name);
      this.options.enqueue(taskId);
    });
  }

  /** Whether the pod may be deleted as far as its log goes: nothing captured by this term, its last lines stored, or its container still running (the capture follows it to its exit). */
  logsStored(pod: Pod | undefined): boolean {
    if (!pod || !this.options.capture) return true;
    const name = pod.metadata.name;
    return !this.captured.has(name) || this.stored.has(name) || !terminated(pod);
  }

  /** The pod is gone: its capture reads once more and ends. */
  gone(taskId: string, pod: Pod): void {
    this.options.capture?.gone(attemptOf(taskId, pod));
    this.captured.delete(pod.metadata.name);
    this.stored.delete(pod.metadata.name);
  }

  /** Stops every capture (the term is over): what was stored stays, and the next term's capture resumes after it. */
  async close(): Promise<void> {
    await this.options.capture?.stopAll();
  }

  private ended(taskId: string, attempt: number): boolean {
    const record = this.options.store.get(taskId);
    return !record || record.body.state !== 'queued' || (record.body.task.attempt ?? 1) !== attempt;
  }
}
