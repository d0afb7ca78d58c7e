import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { tempDir } from './support/sqlite.js';

const dir = tempDir();
const child = fileURLToPath(new URL('./support/child.mjs', import.meta.url));

/** Runs the child script in a process of its own; resolves with its JSON line, rejects on a non-zero exit. */
function run(args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (err += d));
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

describe('sqlite: several processes on one file', () => {
  it('three processes incrementing one record by compare-and-set lose no update, and no SQLITE_BUSY escapes', async () => {
    const path = join(dir, 'cas.db');
    const store = await createSqliteStore({ cluster: 'mp', path, requestTimeoutMs: 10_000 });
    await store.create('lock/counter', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: null, leaseTransitions: 0, payload: 0 });
    const perProcess = 150;
    const results = await Promise.all([run(['cas', path, String(perProcess)]), run(['cas', path, String(perProcess)]), run(['cas', path, String(perProcess)])]);
    expect(results.map((r) => r.done)).toEqual([perProcess, perProcess, perProcess]);
    expect((await store.get('lock/counter'))!.record.payload).toBe(3 * perProcess);
    // Every increment is one change: the revisions prove no write was lost or doubled.
    expect((await store.list('')).revision).toBe(String(1 + 3 * perProcess));
    await store.close();
  }, 120_000);

  it('a lock held from two processes excludes the other: a read-then-write of a plain file under it loses nothing', async () => {
    const path = join(dir, 'lock.db');
    const file = join(dir, 'counter.txt');
    writeFileSync(file, '0');
    const perProcess = 8;
    const [a, b] = await Promise.all([run(['lock', path, String(perProcess), file]), run(['lock', path, String(perProcess), file])]);
    expect(Number(readFileSync(file, 'utf8'))).toBe(2 * perProcess);
    const tokens = [...(a.tokens as number[]), ...(b.tokens as number[])];
    expect(new Set(tokens).size).toBe(tokens.length); // a fencing token is never handed out twice
  }, 120_000);
});
