import type { RecordWriteMeaning } from './actions.js';

/** What one answered write of the action applier was: a record write by its meaning, or a pod or record verb. @internal */
export type WriteMeaning = RecordWriteMeaning | 'createPod' | 'releasePod' | 'deletePod' | 'deleteRecord';

/**
 * Seams for crash tests (a process killed after each kind of write): never set
 * in production. A hook that rejects fails the sync, as a crash would end it.
 * @internal
 */
export interface TestHooks {
  /** Called after a write was answered by the API server, before the applier goes on. */
  afterWrite?(meaning: WriteMeaning): void | Promise<void>;
}
