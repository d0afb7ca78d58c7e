import type { JsonValue } from '@rollcall/core';
import { formatMicroTime, type LeaseRecord } from '@rollcall/core/spi';

/**
 * A record held by `holderIdentity`, acquired and renewed now, with a 15 s
 * lease: what a store test writes when the fields themselves are not the point.
 */
export function leaseRecord(holderIdentity: string, payload?: JsonValue, leaseTransitions = 1): LeaseRecord {
  const now = formatMicroTime(new Date());
  return { holderIdentity, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions, ...(payload === undefined ? {} : { payload }) };
}
