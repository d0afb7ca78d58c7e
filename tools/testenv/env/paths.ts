import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The one directory that holds every server's data, logs, pid files and the env file.
 * Overridable with ROLLCALL_TESTENV_ROOT so two checkouts can run side by side.
 */
export function testenvRoot(): string {
  return resolve(process.env.ROLLCALL_TESTENV_ROOT ?? '/tmp/rollcall-testenv');
}

/** Path of the JSON file that `up` writes with every endpoint and credential. */
export function envFilePath(): string {
  return join(testenvRoot(), 'env.json');
}

/** Directory of one unit (a single server process): data, config and log live here. */
export function unitDir(unit: string): string {
  return join(testenvRoot(), unit);
}

/** Log file of one unit; stdout and stderr of the process go here. */
export function unitLogFile(unit: string): string {
  return join(testenvRoot(), 'logs', `${unit}.log`);
}

/** Pid file of one unit. */
export function unitPidFile(unit: string): string {
  return join(testenvRoot(), 'run', `${unit}.pid`);
}

/**
 * Built binaries are cached by name and version outside the work tree, so a fresh
 * clone or a `git clean` does not pay for the Go build again.
 */
export function binaryCacheRoot(): string {
  const base = process.env.ROLLCALL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rollcall');
  return join(base, 'bin');
}

/** The tools/ package directory (works from the sources and from dist/). */
export function toolsPackageDir(): string {
  // sources live in tools/testenv, compiled files in tools/dist/testenv
  let dir = dirname(fileURLToPath(import.meta.url));
  while (dir !== '/') {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@rollcall/tools') return dir;
    dir = dirname(dir);
  }
  throw new Error(`@rollcall/tools: no package.json above ${fileURLToPath(import.meta.url)}`);
}

/** Directory of the Go module that pins one built component (tools/go/<name>). */
export function goModuleDir(name: string): string {
  return join(toolsPackageDir(), 'go', name);
}
