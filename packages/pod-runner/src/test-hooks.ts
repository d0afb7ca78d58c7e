import type { RecordWriteMeaning } from './actions.js';

/**
 * What one answered write was, by meaning: a record write of the action
 * applier (`end`, `retry`, `ack`, `cancel`, `resubmit`, …), a pod or record
 * verb of the applier, or a request any process makes on a task's record —
 * `submit` (a submit created the record: the task is stored), `submitRequested`
 * (a next attempt asked for on an ended task's record), `cancelRequested`
 * (a cancel asked for on the record). @internal
 */
export type WriteMeaning = RecordWriteMeaning | 'createPod' | 'releasePod' | 'deletePod' | 'deleteRecord' | 'submit' | 'submitRequested' | 'cancelRequested';

/**
 * Seams for crash tests (a process killed after each kind of write): never set
 * in production. A hook that rejects fails the sync (or the submit, or the
 * cancel), as a crash would end it.
 * @internal
 */
export interface TestHooks {
  /** Called after a write was answered by the API server, before its writer goes on: what it meant, and whose task. */
  afterWrite?(meaning: WriteMeaning, taskId: string): void | Promise<void>;
}
