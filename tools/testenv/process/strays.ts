import { readdirSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { testenvRoot } from '../env/paths.js';

export interface StrayProcess {
  pid: number;
  commandLine: string;
}

/**
 * Processes running one of `executables` (the servers we start: nothing else is ever
 * treated as ours) whose command line points into the environment root: our servers, found
 * even when a pid file was lost. `down` uses this so it leaves no process behind. A test
 * that checks another instance names its root.
 */
export function processesUsingRoot(executables: ReadonlySet<string>, testenvRootDir: string = testenvRoot()): StrayProcess[] {
  const root = testenvRootDir + '/';
  const found: StrayProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      // only server processes: their own config or data lives under the root
      if (!executables.has(basename(args[0] ?? ''))) continue;
      if (args.slice(1).some((a) => a.includes(root))) found.push({ pid, commandLine: args.join(' ').slice(0, 200) });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}
