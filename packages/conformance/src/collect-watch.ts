import type { RegistryError } from '@rollcall/core';
import type { RecordStore, ScopeOptions, WatchEvent } from '@rollcall/core/spi';
import { waitFor } from './wait-for.js';

/** A watch event that reports a change: put, delete or corrupt (not a progress bookmark). */
export type ChangeEvent = Exclude<WatchEvent, { type: 'progress' }>;

/** A store watch whose events and error are kept for assertions and bounded waits. */
export interface CollectedWatch {
  /** put, delete and corrupt events, in arrival order. */
  readonly events: ChangeEvent[];
  /** Every event in arrival order, progress bookmarks included. */
  readonly all: WatchEvent[];
  /** The error that ended the watch, if it ended. */
  readonly error: RegistryError | undefined;
  /** Every error delivered, in order: a watch ends once, so more than one is a bug this shows. */
  readonly errors: RegistryError[];
  /**
   * Resolves once a change event satisfies `match`, with the change events up to
   * and including it; rejects with the watch's error if it ends first, or after
   * `timeoutMs` (default 5000).
   */
  until(match: (event: ChangeEvent) => boolean, timeoutMs?: number): Promise<ChangeEvent[]>;
  /** Resolves once `count` change events have arrived, with them; rejects like `until`. */
  untilCount(count: number, timeoutMs?: number): Promise<ChangeEvent[]>;
  /** Resolves with the error once the watch has ended; rejects after `timeoutMs` (default 5000). */
  ended(timeoutMs?: number): Promise<RegistryError>;
  close(): void;
}

/** Bound of the collector's waits when none is given, milliseconds. */
const DEFAULT_TIMEOUT_MS = 5000;

/** Watches `prefix` of `store` from `fromRevision` and keeps what arrives. Close it, or close the store. */
export function collectWatch(store: RecordStore, prefix: string, fromRevision: string, options?: ScopeOptions): CollectedWatch {
  const events: ChangeEvent[] = [];
  const all: WatchEvent[] = [];
  const errors: RegistryError[] = [];
  const subscription = store.watch(prefix, fromRevision, {
    event: (event) => {
      all.push(event);
      if (event.type !== 'progress') events.push(event);
    },
    error: (err) => {
      errors.push(err);
    },
  }, options);
  const under = `under ${JSON.stringify(prefix)}`;
  const upTo = async (index: () => number, timeoutMs: number, what: string): Promise<ChangeEvent[]> => {
    const end = await waitFor(() => {
      const i = index();
      return i > 0 ? i : errors[0] ? Promise.reject(errors[0]) : 0;
    }, timeoutMs, () => `${what} ${under} (saw ${JSON.stringify(events.map(describeEvent))})`);
    return events.slice(0, end);
  };
  return {
    events,
    all,
    errors,
    get error() {
      return errors[0];
    },
    until: (match, timeoutMs = DEFAULT_TIMEOUT_MS) => upTo(() => events.findIndex(match) + 1, timeoutMs, 'a matching watch event'),
    untilCount: (count, timeoutMs = DEFAULT_TIMEOUT_MS) => upTo(() => (events.length >= count ? count : 0), timeoutMs, `${count} watch events`),
    ended: (timeoutMs = DEFAULT_TIMEOUT_MS) => waitFor(() => errors[0], timeoutMs, `the watch ${under} to end`),
    close: () => subscription.close(),
  };
}

/** A compact description of an event, for readable `toEqual` failures: `put <key> <holder>`, `delete <key>`, `corrupt <key>`, `progress`. */
export function describeEvent(event: WatchEvent): string {
  if (event.type === 'put') return `put ${event.record.key} ${event.record.record.holderIdentity}`;
  if (event.type === 'delete') return `delete ${event.key}`;
  if (event.type === 'corrupt') return `corrupt ${event.entry.key}`;
  return 'progress';
}
