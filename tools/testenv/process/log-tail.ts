import { existsSync, readFileSync } from 'node:fs';

/** The last `lines` lines of a log file, or a note that it does not exist. */
export function logTail(file: string, lines = 40): string {
  if (!existsSync(file)) return `(no log file at ${file})`;
  const text = readFileSync(file, 'utf8');
  const all = text.trimEnd().split('\n');
  return all.slice(-lines).join('\n');
}
