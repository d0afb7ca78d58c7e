import type { TaskRecordBody } from './task-record.js';

/** How long a `done` record (a task ended and acknowledged) is kept after its acknowledgement: 24 h. Milliseconds. */
export const DEFAULT_RECORD_RETAIN_DONE_MS = 86_400_000;

/**
 * When a record is to be deleted (wall-clock ms): a `done` one at `ackedAt +
 * retainDoneMs`; a queued or finished one never (it is still the runner's
 * work). Only age counts: not the number of records, their bytes, or a
 * submit that wants room — a resubmit of a task is answered from its record
 * for the whole retention, whatever the load.
 */
export function deleteAt(body: Pick<TaskRecordBody, 'state' | 'ackedAt'>, retainDoneMs: number): number | undefined {
  return body.state === 'done' && body.ackedAt !== undefined ? body.ackedAt + retainDoneMs : undefined;
}

/** What {@link dueRecords} finds. */
export interface RetentionDue {
  /** The records whose retention is over at `now`, oldest acknowledgement first. */
  due: string[];
  /** The earliest later deletion (wall-clock ms), if any record will become due: the wake-up to schedule. */
  nextAt?: number;
}

/** Of `records` (by name), those due for deletion at `now` (wall-clock ms) and when the next one will be. Pure. */
export function dueRecords(records: Iterable<{ name: string; body: Pick<TaskRecordBody, 'state' | 'ackedAt'> }>, now: number, retainDoneMs: number): RetentionDue {
  const due: { name: string; at: number }[] = [];
  let nextAt: number | undefined;
  for (const { name, body } of records) {
    const at = deleteAt(body, retainDoneMs);
    if (at === undefined) continue;
    if (at <= now) due.push({ name, at });
    else if (nextAt === undefined || at < nextAt) nextAt = at;
  }
  due.sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { due: due.map((d) => d.name), ...(nextAt === undefined ? {} : { nextAt }) };
}
