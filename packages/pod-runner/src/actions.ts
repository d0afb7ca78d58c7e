import type { Pod } from './pod.js';
import type { TaskRecordBody } from './task-record.js';
import type { TaskStatus } from './task.js';

/** Why a record is written: the crash tests and metrics name writes by meaning, not by verb. */
export type RecordWriteMeaning = 'end' | 'retry' | 'ack' | 'cancel' | 'resubmit' | 'restamp' | 'queueTimeout' | 'progress';

/**
 * One thing the leader's sync does about one task, as `decide` returns it.
 * Only the action applier performs them, each as one conditional request;
 * every answer enqueues the task again, so the next `decide` sees its effect.
 */
export type Action =
  /** Create the pod of the record's current attempt (deterministic name; a 409 with the same spec hash adopts). */
  | { type: 'createPod'; attempt: number }
  /** A create issued this term was never seen by the informer: GET the pod, then adopt it or forget the expectation. */
  | { type: 'resolveCreate'; podName: string }
  /** Replace the record's body (a PUT at the resourceVersion read), stamped with the term. */
  | { type: 'writeRecord'; body: TaskRecordBody; meaning: RecordWriteMeaning; clearRequests?: boolean }
  /** Delete the record (retention over), preconditioned on its uid and resourceVersion. */
  | { type: 'deleteRecord' }
  /** Drop the runner's finalizer from a pod whose end is stored (or whose attempt the record moved past), stamping the term; on a pod without the finalizer, only the stamp, so this term's delete passes the fence. */
  | { type: 'releasePod'; pod: Pod }
  /** Delete a pod, preconditioned on its uid and resourceVersion. */
  | { type: 'deletePod'; pod: Pod; graceSeconds?: number }
  /** Start capturing the running pod's log, if not already. */
  | { type: 'followLogs'; pod: Pod }
  /** Read the pod's last events: the next sync ends its pending timeout with them. */
  | { type: 'fetchEvents'; pod: Pod }
  /** Hand the terminal status to `onStatus`; its acknowledgement comes back as a later `writeRecord(ack)`. */
  | { type: 'deliver'; status: TaskStatus }
  /** Tell the activity stream and metrics about a status change (no write). */
  | { type: 'publish'; status: TaskStatus };
