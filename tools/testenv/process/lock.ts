import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { TestenvError } from '../env/errors.js';

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Takes a lock directory, waiting up to `timeoutMs` for its holder; resolves with the
 * function that gives it back. A lock left by a dead process is taken over.
 */
export async function acquireLock(lockDir: string, timeoutMs: number): Promise<() => void> {
  mkdirSync(dirname(lockDir), { recursive: true });
  const owner = join(lockDir, 'owner');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(owner, String(process.pid));
      return () => rmSync(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let holder = NaN;
      try {
        holder = Number(readFileSync(owner, 'utf8'));
      } catch {
        // the owner file is written just after the directory: give it a moment
      }
      const ownerless = !Number.isFinite(holder) && ageMs(lockDir) > 10_000; // died between mkdir and write
      if (ownerless || (Number.isFinite(holder) && holder > 0 && !isAlive(holder))) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new TestenvError(`timed out after ${timeoutMs} ms waiting for the lock ${lockDir} held by pid ${holder}`);
      await delay(200);
    }
  }
}

/**
 * Runs `fn` while holding a lock directory. Several vitest processes (nx runs packages in
 * parallel) may call `up` at once; the lock makes them take turns.
 */
export async function withLock<T>(lockDir: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const release = await acquireLock(lockDir, timeoutMs);
  try {
    return await fn();
  } finally {
    release();
  }
}
