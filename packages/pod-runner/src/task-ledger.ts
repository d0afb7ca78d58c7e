import { type Clock, ClosedError, hasCode, InvalidArgumentError, type Logger, type Timer } from '@rollcall/core';
import type { ApiClient, RequestContext } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { decodeEntry, decodeLedger, encodeEntry, ENTRY_PREFIX, FORMAT_KEY, LEDGER_FORMAT, ledgerName, type LedgerEntry } from './ledger-format.js';
import { expiredTombstones } from './ledger-retention.js';

/** The API server's bound on a ConfigMap's data (keys and values). Bytes. */
export const CONFIGMAP_MAX_BYTES = 1_048_576;
/**
 * A submit is refused (PAYLOAD_TOO_LARGE, nothing changed) when the ledger would
 * pass this, after pruning tombstones: the rest is kept for the terminal statuses
 * of tasks already accepted, which are never refused. Bytes.
 */
export const SUBMIT_MAX_BYTES = 786_432;
/** First pause before writing again after a failed write; doubles up to {@link MAX_RETRY_MS}. Milliseconds. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/** What {@link TaskLedger} takes. */
export interface TaskLedgerOptions {
  client: ApiClient;
  namespace: string;
  /** The runner's name: the ledger is the ConfigMap `pod-runner-<runner>-ledger`. */
  runner: string;
  clock: Clock;
  logger: Logger;
  /** Keep a tombstone this long after its acknowledgement. Milliseconds. */
  retainDoneMs: number;
  /** Keep at most this many tombstones (the oldest go first). */
  maxDone: number;
  /**
   * Asked just before each of the leader's writes (the patch of a batch, or
   * the create that replaces a deleted ledger); throws (LEASE_LOST) to hold it
   * back. The runner's is its leader gate, the same check as a pod write's.
   * Default: never holds back. A follower's {@link TaskLedger.addIfAbsent} is
   * not asked: it is not the leader's write, and its precondition guards it.
   */
  fence?: (verb: string) => void;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
  /** A submit's write: a failure rejects it (the submit changes nothing) instead of being retried. */
  failFast: boolean;
}

/**
 * The runner's durable task state: one ConfigMap, one data key per task
 * (`task.<id>`), written by JSON merge patches that touch only the keys that
 * changed. Writes are grouped: whatever is asked while a patch is in flight goes
 * out in the next one, so under load a patch carries many tasks. A failed write
 * is retried (after a pause, doubling) until it lands, except a submit's, which
 * is refused. A follower adds a submitted task only where no entry is
 * ({@link addIfAbsent}, a resourceVersion precondition); everything else is the
 * leader's (or a runner's without a registry).
 */
export class TaskLedger {
  readonly name: string;
  /** What this runner believes is stored, by task id, and each entry's stored size. */
  private readonly mirror = new Map<string, { entry: LedgerEntry; bytes: number }>();
  private bytes = 0;
  private pending = new Map<string, string | null>();
  private waiters: Waiter[] = [];
  private inFlight: Promise<void> | undefined;
  private scheduled = false;
  private retryTimer: Timer | undefined;
  private retryMs = FIRST_RETRY_MS;
  private idleWaiters: (() => void)[] = [];
  private closing = false;
  private closed = false;
  /** Patches sent, for the benchmark and tests. */
  writes = 0;

  constructor(private readonly options: TaskLedgerOptions) {
    this.name = ledgerName(options.runner);
  }

  private get path(): string {
    return `/api/v1/namespaces/${this.options.namespace}/configmaps`;
  }

  private context(verb: string): RequestContext {
    return { verb, resource: 'configmaps', namespace: this.options.namespace, name: this.name };
  }

  /** Reads the ledger (creating it when absent): every entry by task id. SCHEMA_MISMATCH for a newer runner's ledger, CORRUPT_RECORD for one that cannot be read. */
  async load(): Promise<Map<string, LedgerEntry>> {
    const data = await this.read();
    const entries = decodeLedger(data, this.name);
    this.mirror.clear();
    this.bytes = 0;
    for (const [taskId, entry] of entries) this.remember(taskId, entry, data[ENTRY_PREFIX + taskId]!);
    this.prune();
    return entries;
  }

  /** The ledger's data, the ConfigMap created (with its format) when absent. */
  private async read(): Promise<Record<string, string>> {
    try {
      const map = await this.options.client.request<{ data?: Record<string, string> }>({ method: 'GET', path: `${this.path}/${this.name}`, context: this.context('get') });
      return map.data ?? {};
    } catch (err) {
      if (!hasCode(err, 'NOT_FOUND')) throw err;
    }
    try {
      await this.create({ [FORMAT_KEY]: String(LEDGER_FORMAT) });
      return { [FORMAT_KEY]: String(LEDGER_FORMAT) };
    } catch (err) {
      if (!hasCode(err, 'ALREADY_EXISTS')) throw err;
      return this.read();
    }
  }

  private async create(data: Record<string, string>): Promise<void> {
    this.writes += 1;
    await this.options.client.request({
      method: 'POST',
      path: this.path,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: this.name, labels: { 'rollcall.dev/task-ledger': this.options.runner } }, data },
      context: this.context('create'),
    });
  }

  /** The entry this runner believes is stored for the task. */
  get(taskId: string): LedgerEntry | undefined {
    return this.mirror.get(taskId)?.entry;
  }

  /** Bytes the ledger's data holds, as this runner believes. */
  get size(): number {
    return this.bytes;
  }

  /** Refuses a new entry that would fill the ledger past {@link SUBMIT_MAX_BYTES} (tombstones pruned first); changes nothing then. */
  assertRoom(taskId: string, entry: LedgerEntry): void {
    const grows = () => this.bytes - (this.mirror.get(taskId)?.bytes ?? 0) + ENTRY_PREFIX.length + taskId.length + encodeEntry(entry).length;
    if (grows() <= SUBMIT_MAX_BYTES) return;
    this.prune(grows() - SUBMIT_MAX_BYTES);
    if (grows() <= SUBMIT_MAX_BYTES) return;
    const counts = { queued: 0, finished: 0, done: 0 };
    for (const { entry: e } of this.mirror.values()) counts[e.state] += 1;
    throw new InvalidArgumentError(
      `task ledger ${this.name} is full (${this.bytes} bytes of ${SUBMIT_MAX_BYTES}: ${counts.queued} queued, ${counts.finished} finished and not acknowledged, ${counts.done} tombstones): task ${taskId} was not accepted`,
      { backend: BACKEND, code: 'PAYLOAD_TOO_LARGE' },
    );
  }

  /** Stores the task's entry (undefined: removes it); resolves once written. `failFast`: a failed write rejects instead of being retried. */
  write(taskId: string, entry: LedgerEntry | undefined, failFast = false): Promise<void> {
    const key = ENTRY_PREFIX + taskId;
    const text = entry ? encodeEntry(entry) : null;
    this.forget(taskId);
    if (entry) this.remember(taskId, entry, text!);
    if (entry?.state === 'done') this.prune();
    this.pending.set(key, text);
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject, failFast });
      this.schedule();
    });
  }

  /**
   * A follower's submit: the task's entry is added only if the ledger has none
   * (a resourceVersion precondition, read again on a conflict). Resolves with the
   * entry found, or undefined when this one was added.
   */
  async addIfAbsent(taskId: string, entry: LedgerEntry): Promise<LedgerEntry | undefined> {
    const key = ENTRY_PREFIX + taskId;
    for (;;) {
      let map: { metadata: { resourceVersion: string }; data?: Record<string, string> };
      try {
        map = await this.options.client.request({ method: 'GET', path: `${this.path}/${this.name}`, context: this.context('get') });
      } catch (err) {
        if (!hasCode(err, 'NOT_FOUND')) throw err;
        try {
          await this.create({ [FORMAT_KEY]: String(LEDGER_FORMAT), [key]: encodeEntry(entry) });
          return undefined;
        } catch (createErr) {
          if (!hasCode(createErr, 'ALREADY_EXISTS')) throw createErr;
          continue;
        }
      }
      decodeLedger({ [FORMAT_KEY]: map.data?.[FORMAT_KEY] ?? String(LEDGER_FORMAT) }, this.name);
      const found = map.data?.[key];
      if (found !== undefined) return decodeEntry(key, found, this.name);
      try {
        this.writes += 1;
        await this.patch({ metadata: { resourceVersion: map.metadata.resourceVersion }, data: { [key]: encodeEntry(entry) } });
        return undefined;
      } catch (err) {
        if (!hasCode(err, 'CONFLICT')) throw err;
      }
    }
  }

  /** Resolves once every write asked so far has landed (or been refused). */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private get busy(): boolean {
    return this.pending.size > 0 || this.inFlight !== undefined;
  }

  /**
   * Stops writing: what is in flight or asked goes out once more; a write that
   * then fails is refused (false for the runner), left to the next runner, which
   * finds the pods and the entries this one had.
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.busy && !this.retryTimer) await this.idle();
    this.closed = true;
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    const closedError = new ClosedError('the pod runner was closed before its task ledger was written', { backend: BACKEND });
    for (const waiter of this.waiters.splice(0)) waiter.reject(closedError);
    this.pending.clear();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private remember(taskId: string, entry: LedgerEntry, text: string): void {
    const bytes = ENTRY_PREFIX.length + taskId.length + text.length;
    this.mirror.set(taskId, { entry, bytes });
    this.bytes += bytes;
  }

  private forget(taskId: string): void {
    const known = this.mirror.get(taskId);
    if (!known) return;
    this.bytes -= known.bytes;
    this.mirror.delete(taskId);
  }

  /** Removes the tombstones past their retention or count, and the oldest while `needBytes` more are wanted. */
  private prune(needBytes = 0): void {
    const done = [...this.mirror].flatMap(([taskId, { entry, bytes }]) => (entry.state === 'done' ? [{ taskId, ackedAt: entry.ackedAt, bytes }] : []));
    for (const taskId of expiredTombstones(done, this.options.clock.wallNow().getTime(), this.options.retainDoneMs, this.options.maxDone, needBytes)) {
      this.forget(taskId);
      this.pending.set(ENTRY_PREFIX + taskId, null);
    }
    if (this.pending.size > 0) this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight || this.retryTimer || this.closed) return;
    this.scheduled = true;
    // what is asked in the same turn goes out in one patch
    queueMicrotask(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.inFlight || this.closed) return;
    if (this.pending.size === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      return;
    }
    const batch = this.pending;
    const waiters = this.waiters.splice(0);
    this.pending = new Map();
    this.inFlight = this.send(batch);
    try {
      await this.inFlight;
      this.retryMs = FIRST_RETRY_MS;
      for (const waiter of waiters) waiter.resolve();
    } catch (err) {
      if (hasCode(err, 'LEASE_LOST')) {
        this.dropFenced(err, waiters);
      } else {
        // what was asked again meanwhile is newer than what failed
        for (const [key, text] of batch) if (!this.pending.has(key)) this.pending.set(key, text);
        for (const waiter of waiters) if (waiter.failFast || this.closing) waiter.reject(err);
        if (!this.closing) this.waiters.unshift(...waiters.filter((w) => !w.failFast));
        else this.pending.clear();
        this.options.logger.warn({ err, ledger: this.name, retryInMs: this.retryMs }, '[rollcall] [pod-runner] could not write the task ledger; trying again');
        if (!this.closing) {
          this.retryTimer = this.options.clock.setTimeout(() => {
            this.retryTimer = undefined;
            void this.flush();
          }, this.retryMs);
        }
        this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
      }
    } finally {
      this.inFlight = undefined;
    }
    if (!this.retryTimer) {
      if (this.pending.size > 0) this.schedule();
      else for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /**
   * A write held back by the fence: this runner's term may be over, so
   * nothing it asked is sent, now or later — the batch and whatever is
   * pending are dropped and every waiter is rejected (LEASE_LOST). The next
   * leader reads the ledger and the pods: a queued task it holds is in the
   * ledger already (a submit resolves only once stored), an end not stored is
   * read again from the pod (not released, it is kept for that), and an
   * acknowledgement not stored means the status is delivered again. This
   * runner reads the ledger afresh when it leads again.
   */
  private dropFenced(err: unknown, inFlight: Waiter[]): void {
    const dropped = this.pending.size;
    this.pending.clear();
    this.retryMs = FIRST_RETRY_MS;
    for (const waiter of [...inFlight, ...this.waiters.splice(0)]) waiter.reject(err);
    this.options.logger.warn({ err, ledger: this.name, dropped }, '[rollcall] [pod-runner] a task ledger write held back: this runner\'s term may be over; left to the next leader');
  }

  /** One merge patch of the changed keys; a ledger deleted out of band is created again from what this runner holds. */
  private async send(batch: Map<string, string | null>): Promise<void> {
    this.options.fence?.('patch');
    this.writes += 1;
    try {
      await this.patch({ data: Object.fromEntries(batch) });
    } catch (err) {
      if (!hasCode(err, 'NOT_FOUND')) throw err;
      this.options.logger.warn({ ledger: this.name }, '[rollcall] [pod-runner] the task ledger was deleted; writing it again from what this runner holds');
      const data: Record<string, string> = { [FORMAT_KEY]: String(LEDGER_FORMAT) };
      for (const [taskId, { entry }] of this.mirror) data[ENTRY_PREFIX + taskId] = encodeEntry(entry);
      this.options.fence?.('create');
      await this.create(data);
    }
  }

  private async patch(body: unknown): Promise<void> {
    await this.options.client.request({ method: 'PATCH', path: `${this.path}/${this.name}`, body, contentType: 'application/merge-patch+json', context: this.context('patch') });
  }
}
