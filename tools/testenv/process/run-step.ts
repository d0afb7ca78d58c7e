import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestenvError } from '../env/errors.js';
import { logTail } from './log-tail.js';

export interface StepOptions {
  /** Human name of the step, used in the error ("build kube-apiserver"). */
  step: string;
  command: string;
  args: string[];
  /** Output of the command is appended here; the error names this file. */
  logFile: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Text written to the command's stdin (e.g. SQL), kept out of the log. */
  input?: string;
}

/**
 * Runs one setup or build step to completion, its output going to a log file.
 * A failure names the step, the exit status and the log file, with the log's tail.
 */
export function runStep(options: StepOptions): Promise<void> {
  mkdirSync(dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, 'a');
  writeFileSync(fd, `\n===== ${new Date().toISOString()} step: ${options.step}\n`);
  return new Promise<void>((resolve, reject) => {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', fd, fd],
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    child.once('error', (error) => {
      closeSync(fd);
      reject(new TestenvError(`step "${options.step}" could not start ${options.command}: ${error.message} (log: ${options.logFile})`, { cause: error }));
    });
    child.once('exit', (code, signal) => {
      closeSync(fd);
      if (code === 0) return resolve();
      const status = signal ? `signal ${signal}` : `exit code ${code}`;
      reject(new TestenvError(`step "${options.step}" failed with ${status}; log: ${options.logFile}\n--- last lines ---\n${logTail(options.logFile)}\n---`));
    });
  });
}
