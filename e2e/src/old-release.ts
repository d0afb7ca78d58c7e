/**
 * The release before incarnations, built from git once and cached: what a
 * rolling update starts from. Its packages (the library and every backend)
 * and its own soak candidate are taken from {@link OLD_RELEASE} with
 * `git archive` and transpiled file by file by Node's own type stripping
 * (no type check: that commit's build checked them), under the cache directory the tools' Go builds use,
 * keyed by the commit and the checkout. Third-party modules are linked from this checkout's
 * node_modules: the lockfile's third-party modules are the same at both
 * commits (checked). No
 * network; a shallow clone without the commit is told how to fetch it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The last commit on main before a record's creation order entered the SPI
 * (0ddd8b2, merged as 73975f6) and incarnations followed: members are records
 * without a creation, announced by create-or-take-over, heartbeats that write
 * a vanished record again, no `registry.failover`.
 */
export const OLD_RELEASE = '8e45efd0ed0912c93c1fd0d4ea5b36d4f9e9e878';

/** The old release's packages built from git: the library and every backend the soak places on. */
const BUILT = ['core', 'child-harness', 'sql', 'sqlite', 'postgres', 'mysql', 'etcd', 'zookeeper', 'kube-client', 'kubernetes', 'migrate'] as const;

/** The old release's built tree, and its soak candidate's entry. */
export interface OldRelease {
  commit: string;
  dir: string;
  /** The old release's `e2e/dist/candidate.js`: the soak candidate as that release had it, on that release's packages. */
  candidate: string;
  /** Milliseconds this call spent building; 0 when the cache held it. */
  builtMs: number;
}

/** This checkout's root (the e2e package's parent), from the sources or from dist. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'e2e', 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('[rollcall] cannot find the checkout root above the e2e package');
    dir = parent;
  }
  return dir;
}

function cacheRoot(): string {
  const base = process.env.ROLLCALL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rollcall');
  return join(base, 'old-release');
}

/** Every `.ts` file under `dir` (declaration files aside). */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
}

/** `src/**\/*.ts` → `dist/**\/*.js`, one file at a time. */
function transpile(packageDir: string): number {
  const src = join(packageDir, 'src');
  const files = sources(src);
  for (const file of files) {
    // Node's own transform (enums and parameter properties too): the sources import with `.js` already.
    const out = stripTypeScriptTypes(readFileSync(file, 'utf8'), { mode: 'transform' });
    const target = join(packageDir, 'dist', file.slice(src.length + 1).replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, out);
  }
  return files.length;
}

/** A lockfile's third-party modules and their versions (the workspace's own packages aside). */
function thirdParty(lockfile: string): Map<string, string> {
  const packages = (JSON.parse(lockfile) as { packages: Record<string, { version?: string; link?: boolean }> }).packages;
  return new Map(Object.entries(packages).flatMap(([path, p]) => (path.startsWith('node_modules/') && !p.link && !path.startsWith('node_modules/@rollcall/') ? [[path, p.version ?? '']] : [])));
}

/** The old release, from the cache or built into it now (about 10 s cold here). */
export function oldRelease(commit: string = OLD_RELEASE): OldRelease {
  const root = repoRoot();
  // Keyed by the checkout too: its node_modules and tools are linked by absolute path.
  const dir = join(cacheRoot(), `${commit.slice(0, 12)}-${createHash('sha256').update(root).digest('hex').slice(0, 8)}`);
  const candidate = join(dir, 'e2e', 'dist', 'candidate.js');
  if (existsSync(join(dir, '.complete')) && existsSync(join(root, 'node_modules'))) return { commit, dir, candidate, builtMs: 0 };
  const started = performance.now();
  const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  try {
    git('cat-file', '-e', `${commit}^{commit}`);
  } catch {
    throw new Error(`[rollcall] the old release ${commit} is not in this clone (shallow?): git fetch --unshallow, or fetch that commit, then run again`);
  }
  const then = thirdParty(git('show', `${commit}:package-lock.json`));
  const now = thirdParty(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const differing = [...new Set([...then.keys(), ...now.keys()])].filter((m) => then.get(m) !== now.get(m));
  if (differing.length) {
    throw new Error(`[rollcall] the old release ${commit} locked other third-party modules than this checkout (${differing.slice(0, 5).join(', ')}): they cannot be linked from here`);
  }
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const paths = [...BUILT.flatMap((p) => [`packages/${p}/src`, `packages/${p}/package.json`]), 'e2e/src', 'e2e/package.json', 'package.json'];
  execFileSync('sh', ['-c', `git -C "$0" archive --format=tar "$1" -- ${paths.map((p) => `'${p}'`).join(' ')} | tar -x -C "$2"`, root, commit, tmp]);
  for (const p of BUILT) transpile(join(tmp, 'packages', p));
  transpile(join(tmp, 'e2e'));
  // node_modules: this checkout's third-party modules; the old release's own packages; the tools' clock as today's (it is the harness's, not the release's).
  const modules = join(tmp, 'node_modules');
  mkdirSync(join(modules, '@rollcall'), { recursive: true });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry === '@rollcall' || entry === '.bin' || entry.startsWith('.')) continue;
    symlinkSync(join(root, 'node_modules', entry), join(modules, entry));
  }
  for (const p of BUILT) symlinkSync(join('..', '..', 'packages', p), join(modules, '@rollcall', p));
  symlinkSync(join('..', '..', 'e2e'), join(modules, '@rollcall', 'e2e'));
  symlinkSync(join(root, 'tools'), join(modules, '@rollcall', 'tools'));
  writeFileSync(join(tmp, '.complete'), `${commit}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return { commit, dir, candidate, builtMs: performance.now() - started };
}
