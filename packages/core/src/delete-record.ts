import { ErrorCode, hasCode } from './errors.js';
import type { MonitoredStore } from './monitored-store.js';
import type { LeaseRecord } from './lease-record.js';
import type { RecordKey } from './store.js';

/**
 * Deletes `key` by compare-and-set on `known` (the caller's last sight of it),
 * else on what a read finds, re-reading on CONFLICT, a few attempts. With
 * `holder`, a record another identity holds is left alone. Absent is done.
 * @internal
 */
export async function deleteRecord(store: Pick<MonitoredStore, 'get' | 'delete'>, key: RecordKey, known: { version: string; record?: LeaseRecord } | undefined, holder?: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = known ?? (await store.get(key));
    if (!current) return;
    if (holder !== undefined && current.record?.holderIdentity !== holder) return;
    try {
      await store.delete(key, current.version);
      return;
    } catch (err) {
      if (hasCode(err, ErrorCode.NOT_FOUND)) return;
      if (!hasCode(err, ErrorCode.CONFLICT)) throw err;
      known = undefined;
    }
  }
}
