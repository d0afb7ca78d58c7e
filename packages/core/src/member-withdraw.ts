import { formatMicroTime, type LeaseRecord } from './lease-record.js';

/** Whether a member record carries the withdraw mark ({@link LeaseRecord.withdrawn}): its member left on purpose. @internal */
export function isWithdrawn(record: LeaseRecord): boolean {
  return record.withdrawn === true;
}

/**
 * The withdraw mark of a member's own record: the record as it was (holder,
 * payload, liveness kept, so a reader of an earlier release sees an update
 * that changes nothing and then the delete, as before), marked, its renewTime
 * the member's wall clock.
 * @internal
 */
export function markWithdrawn(record: LeaseRecord, wallNow: Date): LeaseRecord {
  return { ...record, renewTime: formatMicroTime(wallNow), withdrawn: true };
}
