import type { LogKey, LogSink } from './log-sink.js';
import type { LogLine } from './logs.js';

/** A task's captured log is kept up to this many bytes (10 MiB) unless `logs.maxBytesPerTask` says otherwise. */
export const DEFAULT_MAX_LOG_BYTES = 10 * 1024 * 1024;

/** The text of the line that marks where a log was cut; it is the last line kept. */
export const CUT_MARKER = '[rollcall] log cut:';

/** How a line is stored: the container's timestamp, a space, the text. */
export const storedLine = (line: LogLine) => `${line.time} ${line.text}\n`;

/** A stored line back (see {@link storedLine}), without its newline. */
export function parseStoredLine(raw: string): LogLine {
  const space = raw.indexOf(' ');
  return space < 0 ? { time: '', text: raw } : { time: raw.slice(0, space), text: raw.slice(space + 1) };
}

/** Where a capture resumes: the last stored line's time and how many stored lines end with that time. */
export interface StoredTail {
  time: string;
  count: number;
}

/** How much of a stored log's end is read to find where a capture resumes. Bytes. */
const TAIL_PROBE_BYTES = 256 * 1024;

/**
 * Appends one task's lines to a sink, in order, batched (one append per
 * turn of lines that arrive together), up to a bound: the head of the log is
 * kept, and the first line that would pass the bound is replaced by one
 * {@link CUT_MARKER} line. The head, because a sink is append-only (keeping the
 * tail would mean rewriting it) and what was stored survives a runner crash
 * mid-task; the end of a failing task's output is in its termination message
 * (FallbackToLogsOnError) too.
 */
export class LogWriter {
  private pending: string[] = [];
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private waiters: (() => void)[] = [];
  /** The first append that failed: nothing more is written. */
  failure: Error | undefined;
  /** Bytes stored or on their way. */
  private size: number;
  cut: boolean;

  private constructor(
    private readonly sink: LogSink,
    private readonly key: LogKey,
    private readonly maxBytes: number,
    size: number,
    cut: boolean,
    /** Where a capture resumes, when something was stored before (a runner restarted or took over). */
    readonly tail: StoredTail | undefined,
  ) {
    this.size = size;
    this.cut = cut;
    this.last = tail && { ...tail };
  }

  /** The last line written (stored or on its way): its time and how many lines in a row had it; where a read resumes. */
  last: StoredTail | undefined;

  /** A writer that continues what the sink holds for `key`. */
  static async open(sink: LogSink, key: LogKey, maxBytes: number): Promise<LogWriter> {
    const size = (await sink.stat(key))?.size ?? 0;
    if (size === 0) return new LogWriter(sink, key, maxBytes, 0, false, undefined);
    const from = Math.max(0, size - TAIL_PROBE_BYTES);
    const text = (await sink.read(key, from, size - from)).toString('utf8');
    const lines = text.split('\n').slice(from > 0 ? 1 : 0, -1).map(parseStoredLine);
    const last = lines.at(-1);
    if (!last) return new LogWriter(sink, key, maxBytes, size, false, undefined);
    let count = 0;
    for (let i = lines.length - 1; i >= 0 && lines[i]!.time === last.time; i -= 1) count += 1;
    return new LogWriter(sink, key, maxBytes, size, last.text.startsWith(CUT_MARKER), { time: last.time, count });
  }

  /** Queues a line; false once the log is cut or an append failed (the caller may stop reading). */
  write(line: LogLine): boolean {
    if (this.cut || this.failure) return false;
    let text = storedLine(line);
    const bytes = Buffer.byteLength(text);
    if (this.size + bytes > this.maxBytes) {
      this.cut = true;
      text = storedLine({ time: line.time, text: `${CUT_MARKER} this task's log reached its bound of ${this.maxBytes} bytes (logs.maxBytesPerTask); the lines after this one were not kept` });
    }
    this.size += Buffer.byteLength(text);
    this.pending.push(text);
    if (this.last?.time === line.time) this.last.count += 1;
    else this.last = { time: line.time, count: 1 };
    if (!this.scheduled) {
      this.scheduled = true;
      this.chain = this.chain.then(() => this.appendPending());
    }
    return !this.cut;
  }

  /** Resolves once every queued line is stored (or an append failed: see `failure`). */
  flush(): Promise<void> {
    return this.chain;
  }

  /** Resolves at the next stored batch (or at once when nothing more can come). */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes every {@link changed} waiter (a batch stored, or the capture over). */
  notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async appendPending(): Promise<void> {
    this.scheduled = false;
    const text = this.pending.join('');
    this.pending = [];
    if (!text || this.failure) return;
    try {
      await this.sink.append(this.key, text);
    } catch (err) {
      this.failure = err as Error;
    }
    this.notify();
  }
}
