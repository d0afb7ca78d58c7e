import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryCacheRoot, goModuleDir, testenvRoot } from '../env/paths.js';
import { componentVersion, type GoComponent } from './go-components.js';
import { runStep } from '../process/run-step.js';
import { TestenvError } from '../env/errors.js';
import { withLock } from '../process/lock.js';

const COMPLETE_MARKER = '.complete';

/** The cache directory of one component at its pinned version. */
export function componentDir(component: GoComponent): string {
  return join(binaryCacheRoot(), `${component.name}-${componentVersion(component)}`);
}

/** Absolute path of one built binary (it may not exist yet; see ensureBuilt). */
export function binaryPath(component: GoComponent, binary: string): string {
  return join(componentDir(component), binary);
}

/** True when the component's binaries are in the cache. */
export function isBuilt(component: GoComponent): boolean {
  return existsSync(join(componentDir(component), COMPLETE_MARKER));
}

function goEnv(): NodeJS.ProcessEnv {
  // GOTOOLCHAIN=local: build with the installed Go, never fetch another toolchain
  return { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'local', GOFLAGS: '-mod=readonly', CGO_ENABLED: '0' };
}

/**
 * Builds a component's binaries into the version-keyed cache unless they are there.
 * The build goes to a temporary directory that is renamed at the end, so an interrupted
 * or concurrent build never leaves a half-filled cache entry.
 */
export async function ensureBuilt(component: GoComponent): Promise<string> {
  const target = componentDir(component);
  if (isBuilt(component)) return target;
  // the cache is shared by every environment root: one build per component at a time,
  // the others wait for it (two Kubernetes builds at once would each take twice as long)
  return withLock(`${target}.lock`, BUILD_LOCK_TIMEOUT_MS, async () => (isBuilt(component) ? target : build(component)));
}

const BUILD_LOCK_TIMEOUT_MS = 80 * 60_000;

async function build(component: GoComponent): Promise<string> {
  const target = componentDir(component);
  const version = componentVersion(component);
  const logFile = join(testenvRoot(), 'logs', `build-${component.name}-${version}.log`);
  const staging = `${target}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const started = Date.now();
  console.error(`[testenv] building ${component.name} ${version} (cold build; log: ${logFile})`);
  const cwd = goModuleDir(component.module);
  await runStep({ step: `download Go modules for ${component.name} ${version}`, command: 'go', args: ['mod', 'download'], cwd, logFile, env: goEnv() });
  const ldflags = ['-s', '-w', ...(component.ldflags?.(version) ?? [])].join(' ');
  for (const [pkg, binary] of Object.entries(component.binaries)) {
    await runStep({
      step: `build ${binary} (${pkg}@${version})`,
      command: 'go',
      args: ['build', '-trimpath', `-ldflags=${ldflags}`, '-o', join(staging, binary), pkg],
      cwd,
      logFile,
      env: goEnv(),
    });
  }
  if (component.moduleFiles) {
    const moduleDir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', component.versionOf], { cwd, env: goEnv(), encoding: 'utf8' }).trim();
    for (const [targetName, sources] of Object.entries(component.moduleFiles)) {
      const parts = sources.map((s) => readFileSync(join(moduleDir, s), 'utf8').trim());
      writeFileSync(join(staging, targetName), parts.join('\n---\n') + '\n');
    }
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  writeFileSync(join(staging, COMPLETE_MARKER), JSON.stringify({ version, builtAt: new Date().toISOString(), seconds }) + '\n');
  try {
    renameSync(staging, target);
  } catch (error) {
    // another process finished the same build first: keep its result
    rmSync(staging, { recursive: true, force: true });
    if (!isBuilt(component)) throw new TestenvError(`could not move the ${component.name} build into ${target}`, { cause: error });
  }
  appendFileSync(logFile, `built ${component.name} ${version} in ${seconds} s\n`);
  console.error(`[testenv] built ${component.name} ${version} in ${seconds} s`);
  return target;
}
