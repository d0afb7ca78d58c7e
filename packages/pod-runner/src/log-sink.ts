import { appendFile, mkdir, open, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Which log: one per task attempt of one runner. */
export interface LogKey {
  namespace: string;
  /** The runner's name (`rollcall.dev/runner`). */
  runner: string;
  taskId: string;
  attempt: number;
}

/**
 * Where captured task logs go and are read back from. The runner appends whole
 * lines (UTF-8, each `<RFC 3339 time> <text>\n`), one caller per key at a time,
 * and never rewrites: an object store, a database or a shared volume can back it.
 * Every method rejects on failure; the runner logs it and the capture of that task stops.
 */
export interface LogSink {
  /** Appends `text` (whole lines) to the key's log, creating it. */
  append(key: LogKey, text: string): Promise<void>;
  /** Up to `length` bytes of the key's log from byte `offset`; fewer (or none) at its end. */
  read(key: LogKey, offset: number, length: number): Promise<Buffer>;
  /** The log's size in bytes, or undefined when there is none. */
  stat(key: LogKey): Promise<{ size: number } | undefined>;
  /**
   * Whether every runner of an HA pair reads and writes the same logs. A sink
   * you give is taken to be shared unless it says false; the directory sink says
   * false (the runner cannot know whether the directory is a shared volume).
   */
  readonly shared?: boolean;
}

/** Where a runner keeps its tasks' logs (its option `logs`). */
export interface TaskLogOptions {
  /** The directory of the default sink (see {@link logFile} for the layout). Default {@link DEFAULT_LOG_DIR}. Ignored when `sink` is given. */
  dir?: string;
  /**
   * Shared storage instead of a directory: what an HA pair must use, so that the
   * runner that leads next continues a log and any runner serves it. A runner with
   * a registry and the directory sink logs a warning at start.
   */
  sink?: LogSink;
  /** Bytes kept per task attempt: the head of the log, then one line marking the cut. Default 10485760 (10 MiB). */
  maxBytesPerTask?: number;
}

/** The directory sink's default: `<os.tmpdir()>/rollcall-task-logs` (so `/tmp/rollcall-task-logs` on Linux). */
export const DEFAULT_LOG_DIR = join(tmpdir(), 'rollcall-task-logs');

/** A log's file under the directory sink: `<dir>/<namespace>/<runner>/<taskId>-<attempt>.log`. */
export function logFile(dir: string, key: LogKey): string {
  // namespace, runner and task id are DNS labels or label values: no `/`, never `..`
  return join(dir, key.namespace, key.runner, `${key.taskId}-${key.attempt}.log`);
}

/** The default sink: a file per task attempt under `dir` (see {@link logFile}). */
export function directoryLogSink(dir: string = DEFAULT_LOG_DIR): LogSink {
  const made = new Set<string>();
  return {
    shared: false,
    async append(key, text) {
      const file = logFile(dir, key);
      const parent = join(dir, key.namespace, key.runner);
      if (!made.has(parent)) {
        await mkdir(parent, { recursive: true });
        made.add(parent);
      }
      await appendFile(file, text);
    },
    async read(key, offset, length) {
      let handle;
      try {
        handle = await open(logFile(dir, key), 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
        throw err;
      }
      try {
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, offset);
        return buffer.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
    },
    async stat(key) {
      try {
        return { size: (await stat(logFile(dir, key))).size };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
  };
}

/**
 * The latest attempt of a task whose log the sink holds, or undefined: counts
 * attempts from 1 until one has no log (retries are numbered in turn).
 */
export async function latestStoredAttempt(sink: LogSink, key: Omit<LogKey, 'attempt'>): Promise<number | undefined> {
  let latest: number | undefined;
  for (let attempt = 1; attempt <= 9999 && (await sink.stat({ ...key, attempt })); attempt += 1) latest = attempt;
  return latest;
}
