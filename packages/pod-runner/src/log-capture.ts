import { ConfigurationError, type ErrorCode, hasCode, type Logger, StoreConflictError, type Clock, type Timer } from '@rollcall/core';
import type { ApiClient } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { type LiveLog, readStoredLog } from './log-read.js';
import { directoryLogSink, type LogKey, type LogSink, type TaskLogOptions } from './log-sink.js';
import { DEFAULT_MAX_LOG_BYTES, LogWriter } from './log-writer.js';
import { currentLogHolds, type LogLine, type LogOptions, logStream } from './logs.js';
import type { Pod } from './pod.js';
import type { TaskStatus } from './task.js';

/**
 * How long the release of a finished pod waits for its log's last lines to be
 * stored. Milliseconds. The kubelet ends the stream as the container exits, so
 * this only bounds a sink or an API server that does not answer. On the API
 * client's clock, with the log streams it bounds.
 */
export const CAPTURE_DRAIN_MS = 30_000;

export interface LogCaptureOptions {
  client: ApiClient;
  logger: Logger;
  namespace: string;
  runner: string;
  sink: LogSink;
  /** Bytes kept per task attempt. */
  maxBytes: number;
}

/**
 * How long a follow that may still be passing on the lines of a log file the
 * kubelet rotated is left running after the container's exit without a line
 * before it is ended. Milliseconds. The kubelet ends a follow itself once it has
 * read its file to the end after the exit, and reads at least once a second
 * before; this bounds a server that never ends a follow (kwok), which costs it
 * only when the current file does not hold the follow's last line.
 */
export const SETTLE_QUIET_MS = 5_000;

/** What a capture's read after the exit, of a log it has had lines from, is tried again on (see LogStreamInput.retryFirstOpenOn). */
const RETRY_READABLE: readonly ErrorCode[] = ['UNAVAILABLE', 'INVALID_ARGUMENT'];

/** One task attempt's capture. */
interface Capture extends LiveLog {
  key: LogKey;
  container: string;
  /** Resolves once the capture is over (its last line stored, or it failed or was stopped). */
  done: Promise<void>;
  stop(): void;
  /**
   * The container has terminated: stop following and read what is left of its log once (not every server ends a follow at
   * the exit) — at once when the node's current log file holds the follow's last line, else once the follow ended or was silent.
   */
  settle(): void;
}

/** Resolves once the capture is over, at most {@link CAPTURE_DRAIN_MS} from now on `clock`. */
async function drained(capture: Capture, clock: Clock): Promise<void> {
  let timer: Timer | undefined;
  const bound = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, CAPTURE_DRAIN_MS)));
  await Promise.race([capture.done, bound]);
  timer?.cancel();
}

/** Whether the container ran (it runs, or it terminated): only then has it a log to read. */
export function containerStarted(pod: Pod | undefined, container: string): boolean {
  const state = pod?.status?.containerStatuses?.find((c) => c.name === container)?.state;
  return state?.running !== undefined || state?.terminated !== undefined;
}

function containerTerminated(pod: Pod | undefined, container: string): boolean {
  return pod?.status?.containerStatuses?.find((c) => c.name === container)?.state?.terminated !== undefined;
}

/**
 * The leading runner's copies of its tasks' logs: once a task's container
 * started, one following stream per task attempt appends its lines to the
 * sink (resuming after what the sink holds, so a runner that restarted or took
 * over neither repeats nor skips a line), until the task has ended and the
 * kubelet ended the stream. A finished pod is released only once its capture is
 * over ({@link untilLogged}), so the last lines are stored before the pod goes.
 */
export class LogCapture {
  private readonly captures = new Map<string, Capture>();

  constructor(private readonly options: LogCaptureOptions) {}

  key(status: Pick<TaskStatus, 'taskId' | 'attempt'>): LogKey {
    return { namespace: this.options.namespace, runner: this.options.runner, taskId: status.taskId, attempt: status.attempt };
  }

  /**
   * The task's pod as the watch shows it: starts capturing its container once
   * it started (with `start`, unless captured already), and once it terminated
   * has the capture read what is left and end.
   */
  observe(status: TaskStatus, pod: Pod, container: string, start: boolean, ended: () => boolean): void {
    const id = `${status.taskId}/${status.attempt}`;
    const capture = this.captures.get(id);
    if (capture) {
      if (containerTerminated(pod, capture.container)) capture.settle();
      return;
    }
    if (start && containerStarted(pod, container)) this.start(id, status, container, ended);
  }

  /** The task's pod is gone: nothing more to follow; the capture ends after one last read. */
  gone(status: TaskStatus): void {
    this.captures.get(`${status.taskId}/${status.attempt}`)?.settle();
  }

  private start(id: string, status: TaskStatus, container: string, ended: () => boolean): void {
    const { client, logger, namespace, sink, maxBytes } = this.options;
    const key = this.key(status);
    let stream: AsyncIterableIterator<LogLine> | undefined;
    let following: AsyncIterableIterator<LogLine> | undefined;
    // a line came since the silence timer was last armed
    let heard = false;
    let silence: Timer | undefined;
    let stopped = false;
    let settling = false;
    let over = false;
    let writer: LogWriter | undefined;
    // lines came from this log: a 400 for it now is the node failing for a moment, not a log that is not there
    // (a copy that ends without an error proves nothing: `settle` ends it before a failed open is told)
    let readable = false;
    const copy = async (follow: boolean) => {
      const retryFirstOpenOn = readable ? RETRY_READABLE : undefined;
      stream = logStream({ client, logger, namespace, podName: () => status.podName, container, options: { follow }, ended: follow ? ended : () => true, after: writer!.last, retryFirstOpenOn });
      if (follow) following = stream;
      for await (const line of stream) {
        readable = true;
        heard = true;
        if (!writer!.write(line)) return false;
      }
      return true;
    };
    // A read without follow is served from the node's current log file only: a follow still behind a rotation is the one
    // reader of the rotated file's lines, so it is ended at the exit only once that file holds where it stands.
    const endFollow = async (follow: AsyncIterableIterator<LogLine>) => {
      const position = writer?.last;
      if (!position || (await currentLogHolds({ client, logger, namespace, podName: () => status.podName, container }, position))) return void follow.return?.();
      const check = () => {
        if (over || stopped) return;
        if (!heard) return void follow.return?.();
        heard = false;
        silence = client.clock.setTimeout(check, SETTLE_QUIET_MS);
      };
      heard = false;
      silence = client.clock.setTimeout(check, SETTLE_QUIET_MS);
    };
    const run = async () => {
      writer = await LogWriter.open(sink, key, maxBytes);
      if (writer.cut || stopped) return;
      readable = writer.last !== undefined;
      try {
        // the kubelet ends a follow as the container exits; after `settle`, one read from the last line gets the rest
        // (a follow ended by `settle` holds back a last line without a newline: only this read stores it)
        if ((await copy(!settling)) && settling && !stopped) {
          // a pod already gone has nothing left to read: what was stored is the log
          await copy(false).catch((err: unknown) => {
            if (!hasCode(err, 'NOT_FOUND')) throw err;
          });
        }
      } finally {
        // a capture that failed is over too: what it was given is stored before a follower hears so
        await writer.flush();
      }
      if (writer.failure) throw writer.failure;
    };
    const capture: Capture = {
      key,
      container,
      done: run()
        .catch((err: unknown) => logger.warn({ err, task: status.taskId, attempt: status.attempt }, '[rollcall] [pod-runner] the capture of a task log stopped; what was stored is kept'))
        .finally(() => {
          over = true;
          silence?.cancel();
          writer?.notify();
        }),
      over: () => over,
      changed: () => (writer && !over ? writer.changed() : Promise.resolve()),
      stop: () => {
        stopped = true;
        void stream?.return?.();
      },
      settle: () => {
        if (settling) return;
        settling = true;
        if (following) void endFollow(following);
      },
    };
    this.captures.set(id, capture);
  }

  /**
   * Resolves when a finished task's pod may go: at once when nothing is
   * captured or its container still runs (a cancel or a timeout deletes it:
   * the capture follows it to its exit), else once its capture is over,
   * at most {@link CAPTURE_DRAIN_MS}.
   */
  async untilLogged(status: TaskStatus, pod: Pod | undefined): Promise<void> {
    const capture = this.captures.get(`${status.taskId}/${status.attempt}`);
    if (!capture || !containerTerminated(pod, capture.container)) return;
    capture.settle();
    await drained(capture, this.options.client.clock);
  }

  /**
   * The task's stored log: followed while this runner captures it, else what
   * the sink holds (NOT_FOUND, at the first line, when it holds nothing).
   * `fallback` reads from the pod instead: for a task this runner does not
   * capture (it does not lead) whose pod is there.
   */
  read(status: TaskStatus, options: LogOptions, started: Promise<void> | undefined, ended: () => boolean, fallback: (() => AsyncIterableIterator<LogLine>) | undefined): AsyncIterableIterator<LogLine> {
    const { sink } = this.options;
    const self = this;
    return (async function* () {
      if (started) await started;
      const capture = self.captures.get(`${status.taskId}/${status.attempt}`);
      // a read of an ended task is its whole log: the last lines are being stored
      if (capture && !options.follow && ended()) await drained(capture, self.options.client.clock);
      if (capture) return yield* readStoredLog(sink, capture.key, options, capture);
      const fromPod = fallback?.();
      if (fromPod) return yield* fromPod;
      const key = self.key(status);
      if (!(await sink.stat(key))) throw new StoreConflictError('NOT_FOUND', `task ${status.taskId} attempt ${status.attempt} has no pod any more and no stored log`, { backend: BACKEND });
      yield* readStoredLog(sink, key, options);
    })();
  }

  /** Stops every capture (the runner closes or stops leading); what was stored stays, and the next leader resumes after it. */
  async stopAll(): Promise<void> {
    const captures = [...this.captures.values()];
    this.captures.clear();
    for (const capture of captures) capture.stop();
    await Promise.allSettled(captures.map((c) => c.done));
  }
}

/**
 * The runner's capture from its `logs` option, or undefined for `false`.
 * INVALID_CONFIG for a bad bound. With a registry (an HA pair) and the
 * directory sink, a warning: the runner that leads next writes and serves its
 * own directory, unless that is a volume both share, which it cannot tell.
 */
export function createLogCapture(options: TaskLogOptions | false | undefined, base: Omit<LogCaptureOptions, 'sink' | 'maxBytes'>, ha: boolean): LogCapture | undefined {
  if (options === false) return undefined;
  const maxBytes = options?.maxBytesPerTask ?? DEFAULT_MAX_LOG_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 1) throw new ConfigurationError(`logs.maxBytesPerTask ${maxBytes} is not valid: a whole number of bytes, 1 or more`, { key: 'logs.maxBytesPerTask', backend: BACKEND });
  const sink = options?.sink ?? directoryLogSink(options?.dir);
  if (ha && sink.shared === false) {
    base.logger.warn(
      { dir: options?.sink ? undefined : (options?.dir ?? 'default') },
      '[rollcall] [pod-runner] this runner has a registry (an HA pair) but keeps task logs in a local directory: after a failover the new leader neither continues nor serves the logs the old one captured, unless the directory is a volume both share. Give logs.sink a shared store.',
    );
  }
  return new LogCapture({ ...base, sink, maxBytes });
}
