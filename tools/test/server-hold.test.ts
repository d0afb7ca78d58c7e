import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock } from '../testenv/process/lock.js';

const dir = mkdtempSync(join(tmpdir(), 'rollcall-hold-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A package's run holds its servers with acquireLock from setup to teardown (createGlobalSetup).
describe('a held server', () => {
  it('a second run waits until the first gives it back, then holds it', async () => {
    const lock = join(dir, 'in-use', 'etcd');
    const releaseFirst = await acquireLock(lock, 1_000);
    let second: (() => void) | undefined;
    const waiting = acquireLock(lock, 10_000).then((r) => (second = r));
    await new Promise((r) => setTimeout(r, 600)); // three of its 200 ms polls: it must still wait
    expect(second).toBeUndefined();
    releaseFirst();
    await waiting;
    expect(existsSync(lock)).toBe(true);
    second!();
    expect(existsSync(lock)).toBe(false);
  });

  it('a wait past its bound fails naming the holder', async () => {
    const lock = join(dir, 'in-use', 'kubernetes');
    const release = await acquireLock(lock, 1_000);
    await expect(acquireLock(lock, 300)).rejects.toThrow(`held by pid ${process.pid}`);
    release();
  });

  it('a hold left by a process that died is taken over', async () => {
    const lock = join(dir, 'in-use', 'zookeeper');
    const child = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => child.once('exit', r));
    mkdirSync(lock, { recursive: true });
    writeFileSync(join(lock, 'owner'), String(child.pid)); // as a run killed while holding it leaves it
    const release = await acquireLock(lock, 2_000);
    expect(readFileSync(join(lock, 'owner'), 'utf8')).toBe(String(process.pid));
    release();
  });
});
