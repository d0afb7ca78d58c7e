import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runStep } from '../process/run-step.js';
import { binaryCacheRoot, testenvRoot } from '../env/paths.js';
import { withLock } from '../process/lock.js';

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
  if (packages.every(isInstalled)) return;
  // environments with different roots may install at once; dpkg allows one at a time
  await withLock(join(binaryCacheRoot(), '..', 'apt.lock'), 30 * 60_000, () => install(packages));
}

async function install(packages: readonly string[]): Promise<void> {
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
  // wait for a dpkg lock held by anything else on the machine rather than fail at once
  await run(`apt-get install ${missing.join(' ')}`, ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', ...missing]);
}
