import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { unitLogFile, unitPidFile } from '../env/paths.js';
import { TestenvError } from '../env/errors.js';

export interface DaemonCommand {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

interface PidRecord {
  pid: number;
  command: string;
  /** The process's start time (field 22 of /proc/<pid>/stat), fixed at fork: tells our process from a reused pid without racing its exec. */
  startTime?: string;
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Starts a unit's process in its own session (so it outlives the caller and we can
 * signal its whole process group), with stdout and stderr appended to its log file.
 * No stdio is inherited: a test runner must not wait on a server's pipes.
 */
export function startDaemon(unit: string, cmd: DaemonCommand): number {
  const logFile = unitLogFile(unit);
  mkdirSync(dirname(logFile), { recursive: true });
  mkdirSync(dirname(unitPidFile(unit)), { recursive: true });
  rotateIfLarge(logFile);
  const fd = openSync(logFile, 'a');
  writeFileSync(fd, `\n===== ${new Date().toISOString()} starting ${unit}: ${cmd.command}\n`);
  try {
    const child = spawn(cmd.command, cmd.args, {
      cwd: cmd.cwd,
      env: cmd.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    if (child.pid === undefined) throw new TestenvError(`${unit}: could not start ${cmd.command} (see ${logFile})`);
    child.unref();
    const record: PidRecord = { pid: child.pid, command: cmd.command, startTime: startTimeOf(child.pid) };
    writeFileSync(unitPidFile(unit), JSON.stringify(record));
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

const MAX_LOG_BYTES = 64 * 1024 * 1024;

/** Logs are appended across restarts; keep one previous generation once one grows large. */
function rotateIfLarge(logFile: string): void {
  try {
    if (statSync(logFile).size > MAX_LOG_BYTES) renameSync(logFile, `${logFile}.1`);
  } catch {
    // no log yet
  }
}

function readPidRecord(unit: string): PidRecord | undefined {
  const file = unitPidFile(unit);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

/** True when the process exists, is not a zombie and still runs the command we started. */
function isOurProcess(record: PidRecord): boolean {
  try {
    const stat = readFileSync(`/proc/${record.pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false; // its sockets may linger a moment: see waitForPortsFree
    // Right after spawn the child may not have exec'd yet, so its cmdline is still node's; its start time already holds.
    if (record.startTime !== undefined) return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] === record.startTime;
    // the pid may have been reused by an unrelated process after a reboot or a crash
    const argv0 = readFileSync(`/proc/${record.pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    return argv0 === record.command || argv0.endsWith(`/${record.command.split('/').pop()}`);
  } catch {
    return false;
  }
}

/** The pid of a unit's running process, or undefined when it is not running. */
export function daemonPid(unit: string): number | undefined {
  const record = readPidRecord(unit);
  return record && isOurProcess(record) ? record.pid : undefined;
}

/**
 * Stops a unit: SIGTERM (or `signal`) to its process group, then SIGKILL if it is still there after
 * `graceMs`. With `signal: 'SIGKILL'` it kills at once (a crash, for fault tests).
 */
export async function stopDaemon(unit: string, options: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<void> {
  const record = readPidRecord(unit);
  if (!record) return;
  if (isOurProcess(record)) {
    const signal = options.signal ?? 'SIGTERM';
    signalGroup(record.pid, signal);
    const deadline = Date.now() + (options.graceMs ?? 15_000);
    while (isOurProcess(record) && Date.now() < deadline) await delay(50);
    if (isOurProcess(record)) {
      signalGroup(record.pid, 'SIGKILL');
      const killDeadline = Date.now() + 5_000;
      while (isOurProcess(record) && Date.now() < killDeadline) await delay(50);
      if (isOurProcess(record)) throw new TestenvError(`${unit}: pid ${record.pid} survived SIGKILL`);
    }
  }
  rmSync(unitPidFile(unit), { force: true });
}

/**
 * Freezes a running unit (SIGSTOP to its process group) and resolves once it is stopped:
 * it keeps its sockets open but runs no code, so it can neither reconnect nor answer
 * until `resumeDaemon`.
 */
export async function pauseDaemon(unit: string): Promise<void> {
  const pid = daemonPid(unit);
  if (pid === undefined) throw new TestenvError(`${unit} is not running`);
  signalGroup(pid, 'SIGSTOP');
  const deadline = Date.now() + 5_000;
  while (processState(pid) !== 'T') {
    if (Date.now() >= deadline) throw new TestenvError(`${unit}: pid ${pid} did not stop after SIGSTOP`);
    await delay(10);
  }
}

/** Lets a unit frozen by `pauseDaemon` run again (SIGCONT to its process group). */
export function resumeDaemon(unit: string): void {
  const pid = daemonPid(unit);
  if (pid !== undefined) signalGroup(pid, 'SIGCONT');
}

/** The state letter of /proc/<pid>/stat (R, S, T, Z, ...), or undefined when it is gone. */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2);
  } catch {
    return undefined;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // the whole session/process group started by startDaemon
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
