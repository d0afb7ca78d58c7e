import { ErrorCode, hasCode, type Logger, RegistryError, type Timer } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import type { ApiClient } from '@rollcall/kube-client';
import { sortable } from './log-time.js';

/** Options of {@link PodRunner.logs}, as `kubectl logs` has them. */
export interface LogOptions {
  /** Keep streaming until the task ends; a dropped stream is resumed without repeating or losing a line. Default false. */
  follow?: boolean;
  /** Only lines from this time on (RFC 3339). */
  sinceTime?: string;
  /** Only the last lines of what is there now. */
  tailLines?: number;
  /**
   * Stop after this many bytes of log text (each line's text and its newline; whole lines, the one
   * that reaches it included). Default: the whole log, read {@link MAX_LOG_READ_BYTES} at a time.
   */
  limitBytes?: number;
  /** Default the task's container (the template's first). */
  container?: string;
}

/** One line of a task's log, with the time the container wrote it (RFC 3339, nanoseconds). */
export interface LogLine {
  time: string;
  text: string;
}

/** Where a stream stands in a log: its last line's time and how many lines in a row had it. */
export interface LogPosition {
  time: string;
  count: number;
}

export interface LogStreamInput {
  client: ApiClient;
  logger: Logger;
  namespace: string;
  /** The task's pod; read once `started` has resolved. */
  podName(): string;
  container: string;
  /** Resolves when the container can have a log (it started, or the task ended); streams open after it. */
  started?: Promise<void>;
  options: LogOptions;
  /** True once the task has ended: a following stream that ends cleanly is then over. */
  ended(): boolean;
  /** Lines already had (a capture resuming what it stored): the last one's time and how many lines share it; the stream starts after them. */
  after?: LogPosition;
  /**
   * For a copy whose failures no caller hears (the capture): the codes on which
   * a first open is tried again, as a resume is, instead of ending the stream —
   * the capture passes UNAVAILABLE (a timeout, a 5xx, a 429) and INVALID_ARGUMENT
   * (the node's 400, its answer to any read it cannot do now) for a log it has
   * had lines from. Up to 8 opens in all. Default none: the first open's error
   * is the caller's.
   */
  retryFirstOpenOn?: readonly ErrorCode[];
  /** The bound of each request, bytes; default {@link MAX_LOG_READ_BYTES}. */
  readBytes?: number;
}

/**
 * The most one request for a pod's log asks for, bytes: 8 MiB (the API's
 * `limitBytes`, which counts the lines with their timestamps). A longer log is
 * read in more requests, each resuming after the last whole line of the one
 * before, and the next is opened only once every line of the last was taken:
 * the lines held for a slow reader stay within this bound. A request resumes
 * at its last line's second (`sinceTime` has whole seconds), so more than this
 * within one second — one line longer than it included — cannot be read past:
 * the read ends there with PAYLOAD_TOO_LARGE.
 */
export const MAX_LOG_READ_BYTES = 8 * 1024 * 1024;

const MAX_FAILURES = 8;
/** The pause before a stream is opened again: from 100 ms, doubling (less up to 20 % jitter) to 5 s, reset by a line. */
const REOPEN = { initialMs: 100, maxMs: 5000 };

/**
 * Whether the node's current log file of the container still holds the line at
 * `position`, so that a read without `follow` from there on misses nothing. The
 * kubelet serves such a read from the current file alone, never from the files it
 * rotated: false when the file begins after that line (the log was rotated since),
 * and when the read fails (nothing is proven).
 */
export async function currentLogHolds(input: Pick<LogStreamInput, 'client' | 'logger' | 'namespace' | 'podName' | 'container'>, position: LogPosition): Promise<boolean> {
  // resume just before the line: the first line given is it, if the file has it
  const stream = logStream({ ...input, options: { limitBytes: 1 }, ended: () => true, after: { time: position.time, count: position.count - 1 } });
  try {
    const first = await stream.next();
    return !first.done && sortable(first.value.time) === sortable(position.time);
  } catch {
    return false;
  } finally {
    await stream.return?.();
  }
}

/**
 * A pod log as lines. Always asks for timestamps, so that when a following
 * stream drops it reopens from the last line's second (`sinceTime` has whole
 * seconds) and skips what it already gave: no line twice, none lost.
 */
export function logStream(input: LogStreamInput): AsyncIterableIterator<LogLine> {
  const { client, namespace, container, options } = input;
  let podName = '';
  const queue: LogLine[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let done = false;
  let abort: (() => void) | undefined;
  let lastKey = input.after ? sortable(input.after.time) : '';
  let atLastKey = input.after?.count ?? 0;
  let bytes = 0;
  let failures = 0;
  const backoff = new Backoff({ clock: client.clock, ...REOPEN });
  let reopen: Timer | undefined;
  let opened = 0;
  // the last stream ended without an error: every line up to that point was delivered
  let endedCleanly = false;
  const readBytes = input.readBytes ?? MAX_LOG_READ_BYTES;
  // a request cut at its bound: the next is opened once the reader has taken every queued line
  let openWhenDrained = false;

  const finish = (err?: Error) => {
    failure ??= err;
    done = true;
    reopen?.cancel();
    abort?.();
    wake?.();
  };

  const open = async (): Promise<void> => {
    if (done) return;
    opened += 1;
    const resume = lastKey !== '';
    const query = new URLSearchParams({ container, timestamps: 'true' });
    if (options.follow) query.set('follow', 'true');
    const since = resume ? `${lastKey.slice(0, 19)}Z` : options.sinceTime;
    if (since) query.set('sinceTime', since);
    if (!resume && options.tailLines !== undefined) query.set('tailLines', String(options.tailLines));
    // Each request stops at the bound; the caller's limit counts text, not the API's bytes with their timestamps, so it is applied
    // here to the lines (the stream is aborted as it is reached): a resumed request re-reads its second, which a small limit would not hold.
    const cap = readBytes;
    query.set('limitBytes', String(cap));
    let seenAtKey = 0;
    let receivedAny = false;
    let received = 0;
    let taken = 0;
    const take = (text: string): void => {
      const space = text.indexOf(' ');
      const time = space > 0 ? text.slice(0, space) : '';
      const line: LogLine = { time, text: space > 0 ? text.slice(space + 1) : text };
      const key = sortable(time);
      if (key < lastKey) return;
      if (key === lastKey) {
        seenAtKey += 1;
        if (seenAtKey <= atLastKey) return;
        atLastKey = seenAtKey;
      } else {
        lastKey = key;
        seenAtKey = 1;
        atLastKey = 1;
      }
      taken += 1;
      bytes += Buffer.byteLength(line.text) + 1;
      queue.push(line);
      wake?.();
      if (options.limitBytes !== undefined && bytes >= options.limitBytes) finish();
    };
    try {
      const stream = await client.stream(
        `/api/v1/namespaces/${namespace}/pods/${podName}/log?${query}`,
        { verb: 'get', resource: 'pods/log', namespace, name: podName },
        {
          line: (raw) => {
            receivedAny = true;
            failures = 0;
            backoff.reset();
            const text = raw as string;
            received += Buffer.byteLength(text) + 1;
            // the line that reaches the bound may be cut: the next request reads it whole
            if (received < cap) take(text);
          },
          end: (error) => {
            abort = undefined;
            if (done) return;
            if (!error && received >= cap && !done) {
              if (taken === 0) return finish(new RegistryError(ErrorCode.PAYLOAD_TOO_LARGE, `the log of pod ${podName} has more than ${readBytes} bytes within the second of ${lastKey.slice(0, 19)}Z: it cannot be read past it`));
              if (queue.length === 0) return void open();
              openWhenDrained = true;
              return;
            }
            endedCleanly = !error;
            if (!error && (!options.follow || input.ended())) return finish();
            if (!receivedAny) failures += 1;
            if (failures >= MAX_FAILURES) return finish(error ?? new Error(`the log of pod ${podName} keeps ending without a line`));
            input.logger.debug({ err: error, pod: podName }, '[rollcall] [pod-runner] log stream ended; resuming from its last line');
            reopen = backoff.schedule(() => void open());
          },
        },
        'text',
      );
      if (done) return stream.abort();
      abort = stream.abort;
    } catch (err) {
      // the container exited (the kubelet ended the stream), then the task ended and its pod was released: nothing was lost
      if (endedCleanly && input.ended() && hasCode(err, 'NOT_FOUND')) return finish();
      failures += 1;
      // the first open tells the caller (no such pod, no permission); a resume, and a capture's first open, keep trying a while
      const final = opened === 1 && !input.retryFirstOpenOn?.some((code) => hasCode(err, code));
      if (final || failures >= MAX_FAILURES) return finish(err as Error);
      reopen = backoff.schedule(() => void open());
    }
  };

  void (input.started ?? Promise.resolve()).then(() => {
    podName = input.podName();
    return open();
  });
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next(): Promise<IteratorResult<LogLine>> {
      for (;;) {
        const line = queue.shift();
        if (line) return { value: line, done: false };
        if (openWhenDrained && !done) {
          openWhenDrained = false;
          void open();
        }
        if (done) {
          if (failure) {
            const err = failure;
            failure = undefined;
            throw err;
          }
          return { value: undefined, done: true };
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
    async return(): Promise<IteratorResult<LogLine>> {
      finish();
      queue.length = 0;
      return { value: undefined, done: true };
    },
  };
}
