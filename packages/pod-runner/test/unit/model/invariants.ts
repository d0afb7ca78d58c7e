import { podAttempt } from '../../../src/decide.js';
import { FINALIZER, type Pod } from '../../../src/pod.js';
import type { TaskRecord, TaskRecordBody } from '../../../src/task-record.js';
import type { TaskStatus } from '../../../src/task.js';

/** The invariants the model checks, each violation named by one of these. */
export type Invariant = 'one-pod-per-attempt' | 'one-terminal-write' | 'no-create-after-end' | 'release-after-end' | 'quiescent-decided';

/** What the server saw, judged as it happens: each check reads the server's state before the request lands. */
export class InvariantLedger {
  readonly violations: { invariant: Invariant; detail: string }[] = [];
  private readonly creates = new Map<string, number>();
  private readonly ends = new Map<string, number>();
  private readonly storedEnds = new Map<string, string>();

  constructor(private readonly where: () => string) {}

  violate(invariant: Invariant, detail: string): void {
    this.violations.push({ invariant, detail: `${detail} (${this.where()})` });
  }

  /** A decide asked for a create: never with a cancel seen or the record ended. */
  createDecided(record: TaskRecord): void {
    if (record.cancelRequested !== undefined || record.body.state !== 'queued') this.violate('no-create-after-end', `${record.body.task.taskId}: createPod decided with the record ${record.body.state}${record.cancelRequested ? ', a cancel requested' : ''}`);
  }

  /** A pod of `attempt` is stored: once per attempt, and only while the record runs that attempt. */
  podCreated(taskId: string, attempt: number, server: TaskRecord | undefined): void {
    if (!server || server.body.state !== 'queued' || (server.body.task.attempt ?? 1) !== attempt) this.violate('no-create-after-end', `${taskId}/${attempt} created while the record is ${server ? `${server.body.state} at attempt ${server.body.task.attempt}` : 'gone'}`);
    const key = `${taskId}/${attempt}`;
    this.creates.set(key, (this.creates.get(key) ?? 0) + 1);
    if (this.creates.get(key)! > 1) this.violate('one-pod-per-attempt', `${key}: a second pod created`);
  }

  /** A record write lands over `old`: an end is written once per attempt and never overwritten. */
  recordWritten(taskId: string, old: TaskRecordBody, next: TaskRecordBody): void {
    const oldAttempt = old.task.attempt ?? 1;
    if (old.state !== 'queued' && next.state === 'finished' && JSON.stringify(next.status) !== JSON.stringify(old.status)) this.violate('one-terminal-write', `${taskId}: attempt ${oldAttempt}'s stored end overwritten (${old.status?.phase} → ${next.status?.phase})`);
    if (old.state !== 'queued' && next.state === 'queued' && (next.task.attempt ?? 1) <= oldAttempt) this.violate('one-terminal-write', `${taskId}: attempt ${oldAttempt} ended and queued again`);
    if (old.state === 'queued' && next.state === 'finished') {
      const key = `${taskId}/${next.task.attempt ?? 1}`;
      this.ends.set(key, (this.ends.get(key) ?? 0) + 1);
      if (this.ends.get(key)! > 1) this.violate('one-terminal-write', `${key}: a second terminal write`);
      this.storedEnds.set(key, JSON.stringify(next.status));
    }
  }

  /** A status handed to `onStatus`: the stored end of its attempt, nothing else. */
  delivered(taskId: string, status: TaskStatus): void {
    if (this.storedEnds.get(`${taskId}/${status.attempt}`) !== JSON.stringify(status)) this.violate('one-terminal-write', `${taskId}: delivered a status that is not the stored end of attempt ${status.attempt}`);
  }

  /** A pod is released or deleted by the runner: only once its attempt's end is stored (or the record moved past it). */
  podLetGo(action: string, pod: Pod, server: TaskRecord | undefined): void {
    if (server && server.body.state === 'queued' && (server.body.task.attempt ?? 1) <= podAttempt(pod)) this.violate('release-after-end', `${action} of ${pod.metadata.name} while the record's attempt ${server.body.task.attempt} is not ended`);
  }

  /** Once quiet: no task left queued, no pod left held. */
  quiet(records: Iterable<TaskRecord>, pods: Iterable<Pod>): void {
    for (const record of records) if (record.body.state === 'queued') this.violate('quiescent-decided', `${record.body.task.taskId} still queued at attempt ${record.body.task.attempt} once quiet`);
    for (const pod of pods) if (pod.metadata.finalizers?.includes(FINALIZER)) this.violate('quiescent-decided', `${pod.metadata.name} still held by the finalizer once quiet`);
  }
}
