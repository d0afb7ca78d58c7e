import type { RecordStore, WatchEvent } from '@rollcall/core/spi';
import type { WatchCounts } from './protocol.js';

export function emptyWatchCounts(): WatchCounts {
  return { put: 0, delete: 0, corrupt: 0, progress: 0 };
}

/**
 * `store` as is, except that every event its watches deliver is counted in
 * `counts` by type: what this simulated process receives, however many
 * watches its registry keeps.
 */
export function countingStore(store: RecordStore, counts: WatchCounts): RecordStore {
  const watch: RecordStore['watch'] = (prefix, fromRevision, listener, options) =>
    store.watch(
      prefix,
      fromRevision,
      {
        event(event: WatchEvent) {
          counts[event.type]++;
          listener.event(event);
        },
        error: (error) => listener.error(error),
      },
      options,
    );
  return new Proxy(store, {
    get(target, property) {
      if (property === 'watch') return watch;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
