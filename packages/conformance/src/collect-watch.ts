import type { RegistryError } from '@rollcall/core';
import type { RecordStore, WatchEvent } from '@rollcall/core/spi';
import { waitFor } from './wait-for.js';

/** A store watch whose events and error are kept for assertions. Bookmarks (`progress`) are kept apart. */
export interface CollectedWatch {
  /** put, delete and corrupt events, in arrival order. */
  readonly events: Exclude<WatchEvent, { type: 'progress' }>[];
  /** The error that ended the watch, if it ended. */
  readonly error: RegistryError | undefined;
  /** Resolves once an event satisfies `match`; returns the events up to and including it. */
  until(match: (event: Exclude<WatchEvent, { type: 'progress' }>) => boolean, timeoutMs: number): Promise<Exclude<WatchEvent, { type: 'progress' }>[]>;
  /** Resolves with the error once the watch has ended. */
  ended(timeoutMs: number): Promise<RegistryError>;
  close(): void;
}

export function collectWatch(store: RecordStore, prefix: string, fromRevision: string): CollectedWatch {
  const events: Exclude<WatchEvent, { type: 'progress' }>[] = [];
  let error: RegistryError | undefined;
  const subscription = store.watch(prefix, fromRevision, {
    event: (event) => {
      if (event.type !== 'progress') events.push(event);
    },
    error: (err) => {
      error = err;
    },
  });
  return {
    events,
    get error() {
      return error;
    },
    async until(match, timeoutMs) {
      const index = await waitFor(() => {
        const i = events.findIndex(match);
        return i >= 0 ? i + 1 : error ? Promise.reject(error) : 0;
      }, timeoutMs, `a matching watch event under ${JSON.stringify(prefix)}`);
      return events.slice(0, index);
    },
    async ended(timeoutMs) {
      return waitFor(() => error, timeoutMs, `the watch under ${JSON.stringify(prefix)} to end`);
    },
    close: () => subscription.close(),
  };
}

/** A compact description of an event, for readable `toEqual` failures. */
export function describeEvent(event: Exclude<WatchEvent, { type: 'progress' }>): string {
  if (event.type === 'put') return `put ${event.record.key} ${event.record.record.holderIdentity}`;
  if (event.type === 'delete') return `delete ${event.key}`;
  return `corrupt ${event.entry.key}`;
}
