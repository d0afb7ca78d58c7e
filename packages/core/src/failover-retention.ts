import type { RecordKey } from './store.js';

/**
 * A failover term's done records, oldest first, with the time each was first
 * seen done: what counts against `maxRetained` and which go first when over it.
 * @internal
 */
export class DoneRecords {
  private readonly since = new Map<RecordKey, number>();

  constructor(private readonly maxRetained: number) {}

  /** Notes whether `key` is done now (the first time seen done kept), and forgets it once it is not. */
  note(key: RecordKey, done: boolean, now: number): void {
    if (!done) this.since.delete(key);
    else if (!this.since.has(key)) this.since.set(key, now);
  }

  /** How long `key` has been done, milliseconds; 0 if it is not. */
  doneForMs(key: RecordKey, now: number): number {
    return now - (this.since.get(key) ?? now);
  }

  forget(key: RecordKey): void {
    this.since.delete(key);
  }

  /** The oldest done records beyond `maxRetained`, but `except`: to be synced again, and so forgotten. */
  excess(except: RecordKey): RecordKey[] {
    const over = this.since.size - this.maxRetained;
    return over <= 0 ? [] : [...this.since.keys()].slice(0, over).filter((k) => k !== except);
  }

  /** Whether `key` is among the oldest done records beyond `maxRetained`. */
  overCap(key: RecordKey): boolean {
    const over = this.since.size - this.maxRetained;
    return over > 0 && [...this.since.keys()].slice(0, over).includes(key);
  }
}
