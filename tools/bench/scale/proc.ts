import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** What /proc tells of one process at one moment. */
export interface ProcSample {
  /** User plus system CPU time the process has used since it started, seconds. */
  cpuSeconds: number;
  /** Resident set size, bytes. */
  rssBytes: number;
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (`getconf CLK_TCK`, 100 on Linux nearly everywhere). */
let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const answer = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    clockTicks = Number.isFinite(answer) && answer > 0 ? answer : 100;
  }
  return clockTicks;
}

/** The fields of a /proc/<pid>/stat line after the command name, which may hold spaces and parentheses. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ');
}

/** utime + stime (fields 14 and 15 of /proc/<pid>/stat), in clock ticks. */
export function parseCpuTicks(stat: string): number {
  const fields = statFields(stat); // fields[0] is field 3 (state)
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 120)}`);
  return utime + stime;
}

/** The parent pid (field 4 of /proc/<pid>/stat). */
export function parseParentPid(stat: string): number {
  return Number(statFields(stat)[1]);
}

/** VmRSS of /proc/<pid>/status, bytes (the kernel writes it in kB); 0 for a zombie, which has none. */
export function parseRssBytes(status: string): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

/** One process's CPU time and RSS now, or undefined when it is gone. */
export function sampleProcess(pid: number): ProcSample | undefined {
  try {
    const cpuSeconds = parseCpuTicks(readFileSync(`/proc/${pid}/stat`, 'utf8')) / ticksPerSecond();
    return { cpuSeconds, rssBytes: parseRssBytes(readFileSync(`/proc/${pid}/status`, 'utf8')) };
  } catch {
    return undefined;
  }
}

/** `pid` and every process descended from it (a server started through a wrapper counts whole). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = parseParentPid(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // exited while we looked
    }
  }
  const tree: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.pop()!;
    tree.push(next);
    pending.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** The sum over `pids` of what {@link sampleProcess} reads; gone processes count nothing. */
export function sampleProcesses(pids: readonly number[]): ProcSample {
  let cpuSeconds = 0;
  let rssBytes = 0;
  for (const pid of pids) {
    const sample = sampleProcess(pid);
    cpuSeconds += sample?.cpuSeconds ?? 0;
    rssBytes += sample?.rssBytes ?? 0;
  }
  return { cpuSeconds, rssBytes };
}

/** CPU used between two samples over `seconds` of wall time, in cores (1 = one core busy all along). */
export function coresBetween(before: ProcSample, after: ProcSample, seconds: number): number {
  return seconds > 0 ? (after.cpuSeconds - before.cpuSeconds) / seconds : 0;
}
