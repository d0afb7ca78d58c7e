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

/**
 * Compile flags of every Go build here (the client-go elector's too, so it finds the
 * packages it shares with the control plane in Go's build cache): no DWARF, which `-w`
 * strips at the link anyway — less to compile, write to the cache and read at the link.
 */
export const GO_BUILD_FLAGS = ['-trimpath', '-gcflags=all=-dwarf=false'] as const;

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
  await ensureAllBuilt([component]);
  return componentDir(component);
}

/**
 * The components in build groups: those of one Go module with the same link flags (the
 * control plane and the kubelet) in one group, built by one `go build`, so the module's
 * packages are loaded once and the links run side by side instead of one after another.
 */
export function buildGroups(components: readonly GoComponent[]): GoComponent[][] {
  const groups = new Map<string, GoComponent[]>();
  for (const component of components) {
    const version = componentVersion(component);
    const key = `${component.module}\0${version}\0${(component.ldflags?.(version) ?? []).join(' ')}`;
    const group = groups.get(key) ?? [];
    if (!group.some((c) => c.name === component.name)) group.push(component);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** Builds every component that is not in the cache, a group at a time (see {@link buildGroups}); resolves with their cache directories. */
export async function ensureAllBuilt(components: readonly GoComponent[]): Promise<string[]> {
  // sequential: each build already uses every core
  for (const group of buildGroups(components)) await ensureGroupBuilt(group);
  return components.map(componentDir);
}

async function ensureGroupBuilt(group: readonly GoComponent[]): Promise<void> {
  // the cache is shared by every environment root: one build per component at a time, the
  // others wait for it (two Kubernetes builds at once would each take twice as long); the
  // locks are taken in name order, so two groups that overlap never wait on each other
  const locked = [...group].filter((c) => !isBuilt(c)).sort((a, b) => a.name.localeCompare(b.name));
  const withLocks = async (rest: GoComponent[]): Promise<void> => {
    const [first, ...others] = rest;
    if (!first) {
      const missing = locked.filter((c) => !isBuilt(c));
      if (missing.length > 0) await build(missing);
      return;
    }
    await withLock(`${componentDir(first)}.lock`, BUILD_LOCK_TIMEOUT_MS, () => withLocks(others));
  };
  await withLocks(locked);
}

const BUILD_LOCK_TIMEOUT_MS = 80 * 60_000;

/** The name `go build -o <dir>/` gives a main package's binary: its path's last element, or the one before a major-version suffix v2 and up (`…/server/v3` → `server`), as cmd/go names it. */
export function goBinaryName(pkg: string): string {
  const parts = pkg.split('/');
  const last = parts.at(-1)!;
  return /^v([2-9]|[1-9][0-9]+)$/.test(last) && parts.length > 1 ? parts.at(-2)! : last;
}

/** Builds components of one module (one group) with one `go build`, each into its own cache entry. */
async function build(components: readonly GoComponent[]): Promise<void> {
  const [lead] = components;
  if (!lead) return;
  const version = componentVersion(lead);
  const names = components.map((c) => c.name).join('+');
  const logFile = join(testenvRoot(), 'logs', `build-${names}-${version}.log`);
  const staging = `${componentDir(lead)}.tmp-${process.pid}`;
  const stagingOf = (c: GoComponent) => `${componentDir(c)}.tmp-${process.pid}`;
  for (const c of components) {
    rmSync(stagingOf(c), { recursive: true, force: true });
    mkdirSync(stagingOf(c), { recursive: true });
  }
  const started = Date.now();
  console.error(`[testenv] building ${names} ${version} (cold build; log: ${logFile})`);
  const cwd = goModuleDir(lead.module);
  await runStep({ step: `download Go modules for ${names} ${version}`, command: 'go', args: ['mod', 'download'], cwd, logFile, env: goEnv() });
  const ldflags = ['-s', '-w', ...(lead.ldflags?.(version) ?? [])].join(' ');
  // `go build -o <dir>/` names each binary by its package's last element; a binary named otherwise is renamed after
  const out = join(staging, '.go-build');
  mkdirSync(out, { recursive: true });
  const packages = components.flatMap((c) => Object.keys(c.binaries));
  await runStep({
    step: `build ${packages.map(goBinaryName).join(', ')} (${names}@${version})`,
    command: 'go',
    args: ['build', ...GO_BUILD_FLAGS, `-ldflags=${ldflags}`, '-o', `${out}/`, ...packages],
    cwd,
    logFile,
    env: goEnv(),
  });
  for (const c of components) {
    for (const [pkg, binary] of Object.entries(c.binaries)) renameSync(join(out, goBinaryName(pkg)), join(stagingOf(c), binary));
  }
  rmSync(out, { recursive: true, force: true });
  for (const c of components) {
    if (c.moduleFiles) {
      const moduleDir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', c.versionOf], { cwd, env: goEnv(), encoding: 'utf8' }).trim();
      for (const [targetName, sources] of Object.entries(c.moduleFiles)) {
        const parts = sources.map((s) => readFileSync(join(moduleDir, s), 'utf8').trim());
        writeFileSync(join(stagingOf(c), targetName), parts.join('\n---\n') + '\n');
      }
    }
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  for (const c of components) {
    writeFileSync(join(stagingOf(c), COMPLETE_MARKER), JSON.stringify({ version, builtAt: new Date().toISOString(), seconds, builtWith: names }) + '\n');
    try {
      renameSync(stagingOf(c), componentDir(c));
    } catch (error) {
      // another process finished the same build first: keep its result
      rmSync(stagingOf(c), { recursive: true, force: true });
      if (!isBuilt(c)) throw new TestenvError(`could not move the ${c.name} build into ${componentDir(c)}`, { cause: error });
    }
  }
  appendFileSync(logFile, `built ${names} ${version} in ${seconds} s\n`);
  console.error(`[testenv] built ${names} ${version} in ${seconds} s`);
}
