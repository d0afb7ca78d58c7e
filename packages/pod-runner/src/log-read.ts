import type { LogKey, LogSink } from './log-sink.js';
import type { LogLine, LogOptions } from './logs.js';
import { parseStoredLine } from './log-writer.js';
import { sortable } from './log-time.js';

/** A capture still writing the log being read: a follower waits on it. */
export interface LiveLog {
  /** Resolves at the capture's next stored batch, or when it is over. */
  changed(): Promise<void>;
  /** True once the capture stored its last line. */
  over(): boolean;
}

/** Bytes read from the sink at a time (more when one line is longer). */
const READ_BYTES = 64 * 1024;

/**
 * A captured log as lines, with the options of {@link LogOptions} (but
 * `container`: one container's log is captured). With `live` and `follow`,
 * waits for what the capture stores next until it is over; every line is read
 * once, by its byte offset in the sink.
 */
export async function* readStoredLog(sink: LogSink, key: LogKey, options: LogOptions, live?: LiveLog): AsyncGenerator<LogLine> {
  const since = options.sinceTime === undefined ? undefined : sortable(options.sinceTime);
  const cursor = { offset: 0 };
  let bytes = 0;
  // tailLines counts from what is stored when the read begins
  let skip = 0;
  if (options.tailLines !== undefined) {
    let total = 0;
    for await (const _ of storedLines(sink, key, { offset: 0 })) total += 1;
    skip = Math.max(0, total - options.tailLines);
  }
  for (;;) {
    // read `over` before the sink: a capture over by then stored everything this read can see
    const wasOver = !live || !options.follow || live.over();
    const changed = live && options.follow && !wasOver ? live.changed() : undefined;
    for await (const raw of storedLines(sink, key, cursor)) {
      if (skip > 0) {
        skip -= 1;
        continue;
      }
      const line = parseStoredLine(raw);
      if (since !== undefined && sortable(line.time) < since) continue;
      bytes += Buffer.byteLength(line.text) + 1;
      yield line;
      if (options.limitBytes !== undefined && bytes >= options.limitBytes) return;
    }
    if (wasOver) return;
    await changed;
  }
}

/** Every whole line stored from `cursor.offset` on, as it is now; the cursor moves past each chunk of lines it yields. */
async function* storedLines(sink: LogSink, key: LogKey, cursor: { offset: number }): AsyncGenerator<string> {
  let want = READ_BYTES;
  for (;;) {
    const chunk = await sink.read(key, cursor.offset, want);
    const end = chunk.lastIndexOf(10);
    if (end < 0) {
      // a line longer than the chunk: read more at once; a short chunk: nothing new yet
      if (chunk.length < want) return;
      want *= 2;
      continue;
    }
    cursor.offset += end + 1;
    want = READ_BYTES;
    yield* chunk.subarray(0, end).toString('utf8').split('\n');
  }
}
