import type { RegistryError } from '@rollcall/core';
import type { RecordStore, WatchEvent, WatchSubscription } from '@rollcall/core/spi';
import { waitFor } from './wait.js';

/** A watch whose events and end are kept, for bounded waits on them. */
export class Collected {
  readonly events: WatchEvent[] = [];
  error: RegistryError | undefined;
  readonly subscription: WatchSubscription;

  constructor(store: RecordStore, prefix: string, fromRevision: string) {
    this.subscription = store.watch(prefix, fromRevision, {
      event: (e) => this.events.push(e),
      error: (e) => (this.error = e),
    });
  }

  /** Events other than progress bookmarks. */
  get changes(): WatchEvent[] {
    return this.events.filter((e) => e.type !== 'progress');
  }

  untilChanges(count: number, timeoutMs = 5000): Promise<WatchEvent[]> {
    return waitFor(() => (this.changes.length >= count ? this.changes : undefined), timeoutMs, `${count} watch events (have ${this.changes.length})`);
  }

  untilError(timeoutMs = 5000): Promise<RegistryError> {
    return waitFor(() => this.error, timeoutMs, 'the watch to end with an error');
  }
}
