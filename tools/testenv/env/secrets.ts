import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { testenvRoot } from './paths.js';

/**
 * A password that is random per environment root and stable across restarts (the data
 * directories keep the users). Stored with mode 0600 next to the data, never logged.
 */
export function secret(name: string): string {
  const file = join(testenvRoot(), 'secrets', name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const value = randomBytes(12).toString('hex');
  try {
    writeFileSync(file, value, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // another process wrote it first: use that one
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(file, 'utf8').trim();
    throw error;
  }
  return value;
}
