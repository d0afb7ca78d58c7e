import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogCapture } from '../../src/log-capture.js';
import { readStoredLog } from '../../src/log-read.js';
import { directoryLogSink, type LogKey, type LogSink, logFile } from '../../src/log-sink.js';
import { CUT_MARKER, LogWriter } from '../../src/log-writer.js';
import type { LogLine, LogOptions } from '../../src/logs.js';

let dir: string;
let sink: LogSink;
const key: LogKey = { namespace: 'batch', runner: 'rollcall', taskId: 'ingest', attempt: 2 };
/** Line n of a test log: its time is n ms after 10:00:00, so order and time agree. */
const line = (n: number, text = `line ${n}`): LogLine => ({ time: `2026-12-05T10:00:00.${String(n).padStart(3, '0')}000000Z`, text });

async function collect(iterable: AsyncIterable<LogLine>): Promise<string[]> {
  const texts: string[] = [];
  for await (const l of iterable) texts.push(l.text);
  return texts;
}

const read = (options: LogOptions = {}) => collect(readStoredLog(sink, key, options));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rollcall-log-sink-'));
  sink = directoryLogSink(dir);
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the directory log sink', () => {
  it('keeps a file per task attempt under <dir>/<namespace>/<runner>/<taskId>-<attempt>.log, and reads it back by offset', async () => {
    expect(await sink.stat(key)).toBeUndefined();
    expect((await sink.read(key, 0, 10)).length).toBe(0);
    await sink.append(key, 'a b\n');
    await sink.append(key, 'c d\n');
    expect(logFile(dir, key)).toBe(join(dir, 'batch', 'rollcall', 'ingest-2.log'));
    expect(readFileSync(logFile(dir, key), 'utf8')).toBe('a b\nc d\n');
    expect(await sink.stat(key)).toEqual({ size: 8 });
    expect((await sink.read(key, 4, 100)).toString()).toBe('c d\n');
    expect(sink.shared).toBe(false);
  });
});

describe('LogWriter', () => {
  it('stores lines in order, with their times, and reads them back with since, tail and byte limits', async () => {
    const writer = await LogWriter.open(sink, key, 1 << 20);
    for (let n = 1; n <= 5; n += 1) writer.write(line(n));
    await writer.flush();
    expect(readFileSync(logFile(dir, key), 'utf8').split('\n')[0]).toBe(`${line(1).time} line 1`);
    expect(await read()).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);
    expect(await read({ tailLines: 2 })).toEqual(['line 4', 'line 5']);
    expect(await read({ sinceTime: line(3).time })).toEqual(['line 3', 'line 4', 'line 5']);
    expect(await read({ limitBytes: 14 })).toEqual(['line 1', 'line 2']);
    const first = (await collect(readStoredLog(sink, key, {})))[0];
    expect(first).toBe('line 1');
  });

  it('keeps the head up to the bound and marks the cut with one line; nothing after it, even after a restart', async () => {
    const bytesPerLine = Buffer.byteLength(`${line(1).time} line 1\n`);
    const writer = await LogWriter.open(sink, key, bytesPerLine * 3);
    const accepted = [1, 2, 3, 4, 5].map((n) => writer.write(line(n)));
    await writer.flush();
    expect(accepted).toEqual([true, true, true, false, false]);
    const texts = await read();
    expect(texts.slice(0, 3)).toEqual(['line 1', 'line 2', 'line 3']);
    expect(texts).toHaveLength(4);
    expect(texts[3]).toMatch(new RegExp(`^${CUT_MARKER.replace(/[[\]]/g, '\\$&')} this task's log reached its bound of ${bytesPerLine * 3} bytes`));
    const again = await LogWriter.open(sink, key, bytesPerLine * 3);
    expect(again.cut).toBe(true);
    expect(again.write(line(6))).toBe(false);
    await again.flush();
    expect(await read()).toHaveLength(4);
  });

  it('resumes after what is stored: the last line\'s time and how many lines share it', async () => {
    const writer = await LogWriter.open(sink, key, 1 << 20);
    writer.write(line(1));
    writer.write(line(2, 'a'));
    writer.write(line(2, 'b'));
    await writer.flush();
    const again = await LogWriter.open(sink, key, 1 << 20);
    expect(again.tail).toEqual({ time: line(2).time, count: 2 });
    expect(again.cut).toBe(false);
    expect((await LogWriter.open(sink, { ...key, attempt: 3 }, 1 << 20)).tail).toBeUndefined();
  });

  it('a follower of a live log reads every line once, in order, until the capture is over', async () => {
    const writer = await LogWriter.open(sink, key, 1 << 20);
    let over = false;
    const live = { changed: () => (over ? Promise.resolve() : writer.changed()), over: () => over };
    const reading = collect(readStoredLog(sink, key, { follow: true }, live));
    for (let n = 1; n <= 300; n += 1) {
      writer.write(line(n % 1000));
      // a batch stored now and then while the follower waits
      if (n % 50 === 0) await writer.flush();
    }
    await writer.flush();
    over = true;
    writer.notify();
    expect(await reading).toEqual(Array.from({ length: 300 }, (_, i) => `line ${i + 1}`));
  });

  it('reads a line longer than one read of the sink whole', async () => {
    const writer = await LogWriter.open(sink, key, 1 << 20);
    const long = 'x'.repeat(200_000);
    writer.write(line(1, long));
    writer.write(line(2));
    await writer.flush();
    expect(await read()).toEqual([long, 'line 2']);
  });
});

describe('createLogCapture', () => {
  const base = () => {
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (_: unknown, message?: string) => void warnings.push(message ?? '') };
    return { warnings, base: { client: undefined as never, logger, namespace: 'batch', runner: 'rollcall' } };
  };

  it('refuses a bound that is not a positive whole number of bytes', () => {
    for (const maxBytesPerTask of [0, -1, 1.5]) {
      expect(() => createLogCapture({ dir, maxBytesPerTask }, base().base, false)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', key: 'logs.maxBytesPerTask' }));
    }
    expect(createLogCapture(false, base().base, false)).toBeUndefined();
  });

  it('warns an HA pair that keeps logs in a local directory, and not one with a shared sink', () => {
    const local = base();
    createLogCapture({ dir }, local.base, true);
    expect(local.warnings).toEqual([expect.stringContaining('keeps task logs in a local directory')]);
    const shared = base();
    createLogCapture({ sink: { ...directoryLogSink(dir), shared: true } }, shared.base, true);
    createLogCapture({ dir }, shared.base, false);
    expect(shared.warnings).toEqual([]);
  });
});
