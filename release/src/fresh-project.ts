import { execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tarball } from './pack.js';

export interface FreshProjectOptions {
  /** The @rollcall packages the project depends on, installed from their tarballs. */
  rollcall: readonly string[];
  /** Third-party dependencies and their ranges, from the registry. Default none. */
  registry?: Readonly<Record<string, string>>;
  /** Install with `--ignore-scripts`: no dependency's install script runs (better-sqlite3 is then left without its native addon). Default false. */
  ignoreScripts?: boolean;
  /** `shallow` lays node_modules out as `npm install --global` does: each direct dependency with its own tree. Default npm's `hoisted`. */
  installStrategy?: 'hoisted' | 'shallow';
}

/** A project in the system's temp directory, outside this repository: no workspace links, only what npm installs. */
export interface FreshProject {
  dir: string;
  /** Runs a command in the project; resolves with stdout. Throws on a non-zero exit, with its output. */
  exec(command: string, args: readonly string[], options?: ExecFileSyncOptions): string;
}

/**
 * Creates the project and installs into it: the given @rollcall packages from
 * their tarballs, every other @rollcall package they depend on from its tarball
 * too (through `overrides`, so nothing @rollcall comes from a registry), the
 * rest from the registry.
 */
export function freshProject(tarballs: readonly Tarball[], options: FreshProjectOptions): FreshProject {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-fresh-'));
  const spec = (name: string) => {
    const tarball = tarballs.find((t) => t.name === name);
    if (!tarball) throw new Error(`no tarball of ${name}`);
    return `file:${tarball.file}`;
  };
  const manifest = {
    name: 'rollcall-fresh-project',
    private: true,
    type: 'module',
    dependencies: { ...Object.fromEntries(options.rollcall.map((name) => [name, spec(name)])), ...options.registry },
    overrides: Object.fromEntries(tarballs.map((t) => [t.name, spec(t.name)])),
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  const exec = (command: string, args: readonly string[], execOptions: ExecFileSyncOptions = {}): string => {
    try {
      return execFileSync(command, args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...execOptions }) as string;
    } catch (err) {
      const e = err as { status?: number; stdout?: string; stderr?: string };
      throw new Error(`${command} ${args.join(' ')} exited ${e.status}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, { cause: err });
    }
  };
  exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `--install-strategy=${options.installStrategy ?? 'hoisted'}`, ...(options.ignoreScripts ? ['--ignore-scripts'] : [])]);
  return { dir, exec };
}

/** Every installed package of a project: the paths npm's hidden lockfile lists under node_modules. */
export function installedPackages(dir: string): { path: string; name: string }[] {
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, { link?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && !entry.link)
    .map(([path]) => ({ path, name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length) }));
}

/** Where each copy of `name` is installed. */
export function copiesOf(dir: string, name: string): string[] {
  return installedPackages(dir)
    .filter((p) => p.name === name)
    .map((p) => p.path);
}

/** Disk use of a directory in MiB, as `du -sk` counts it; `ownOnly` leaves out its nested node_modules. */
export function diskUsageMb(dir: string, options: { ownOnly?: boolean } = {}): number {
  if (!existsSync(dir)) return 0;
  const kib = Number(execFileSync('du', ['-sk', ...(options.ownOnly ? ['--exclude=node_modules'] : []), dir], { encoding: 'utf8' }).split(/\s/)[0]);
  return kib / 1024;
}
