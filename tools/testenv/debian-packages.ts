import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runStep } from './run-step.js';
import { testenvRoot } from './paths.js';

function isInstalled(pkg: string): boolean {
  try {
    const out = execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.includes('install ok installed');
  } catch {
    return false;
  }
}

let updated = false;

/**
 * Installs missing Debian packages with apt-get, so a fresh machine needs nothing but
 * `npm ci && npm test`. Runs `apt-get update` once per process, only when something is missing.
 */
export async function ensureDebianPackages(packages: readonly string[]): Promise<void> {
  const missing = packages.filter((p) => !isInstalled(p));
  if (missing.length === 0) return;
  const logFile = join(testenvRoot(), 'logs', 'apt-get.log');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const run = (step: string, args: string[]) =>
    runStep({
      step,
      command: sudo[0] ?? 'apt-get',
      args: sudo.length ? [...sudo.slice(1), 'apt-get', ...args] : args,
      logFile,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  console.error(`[testenv] installing Debian packages: ${missing.join(' ')} (log: ${logFile})`);
  if (!updated) {
    await run('apt-get update', ['update']);
    updated = true;
  }
  await run(`apt-get install ${missing.join(' ')}`, ['install', '-y', '--no-install-recommends', ...missing]);
}
