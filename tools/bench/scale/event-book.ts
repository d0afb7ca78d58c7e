import { WaitTimeoutError } from '@rollcall/conformance';
import type { WorkerEvent } from './protocol.js';

/**
 * What the worker processes reported, kept so a wait can start after its
 * event arrived: when each master saw each tracked member come and go, and
 * every leadership change. Waits are re-checked on each event and bounded.
 */
export class EventBook {
  /** member → master → when it saw the member added. */
  readonly added = new Map<string, Map<string, number>>();
  /** member → master → when it saw the member removed. */
  readonly removed = new Map<string, Map<string, number>>();
  /** election → the process leading it now, by the events so far. */
  readonly leaders = new Map<string, string>();
  /** Every `elected`, in arrival order. */
  readonly elected: { election: string; process: string; at: number }[] = [];
  private readonly waiters = new Set<() => void>();

  record(event: WorkerEvent): void {
    if (event.kind === 'seen') {
      const book = event.type === 'added' ? this.added : this.removed;
      const times = book.get(event.member) ?? new Map<string, number>();
      book.set(event.member, times);
      if (!times.has(event.watcher)) times.set(event.watcher, event.at);
    } else if (event.type === 'elected') {
      this.leaders.set(event.election, event.process);
      this.elected.push({ election: event.election, process: event.process, at: event.at });
    } else if (this.leaders.get(event.election) === event.process) {
      this.leaders.delete(event.election);
    }
    for (const check of [...this.waiters]) check();
  }

  /** Resolves with `condition()`'s first defined value, checked now and after each event; rejects after `timeoutMs`. */
  until<T>(condition: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = condition();
        if (value === undefined) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new WaitTimeoutError(what, timeoutMs));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}
