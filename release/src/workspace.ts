import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root: two levels above this file, in src/ or in dist/. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The fields of a package.json these checks read. */
export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  keywords?: string[];
  homepage?: string;
  bugs?: { url?: string };
  repository?: { type?: string; url?: string; directory?: string };
  license?: string;
  type?: string;
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  files?: string[];
  engines?: { node?: string };
  publishConfig?: { access?: string };
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optionalDependencies?: Record<string, string>;
  workspaces?: string[];
}

export interface WorkspacePackage {
  /** Absolute directory. */
  dir: string;
  /** Directory relative to the repository root, e.g. `packages/core`. */
  path: string;
  manifest: Manifest;
}

export function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** The root manifest: the repository, licence and engines every package repeats. */
export const rootManifest = (): Manifest => readManifest(REPO_ROOT);

/** Every workspace of the root package.json (`packages/*`, `tools`, ...), in name order. */
export function workspacePackages(): WorkspacePackage[] {
  const dirs = (rootManifest().workspaces ?? []).flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [join(REPO_ROOT, pattern)];
    const parent = join(REPO_ROOT, pattern.slice(0, -2));
    return readdirSync(parent, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(parent, e.name));
  });
  return dirs
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, path: relative(REPO_ROOT, dir), manifest: readManifest(dir) }))
    .sort((a, b) => a.manifest.name.localeCompare(b.manifest.name));
}

/** The packages a release publishes: every workspace not marked private. */
export const publishedPackages = (): WorkspacePackage[] => workspacePackages().filter((p) => !p.manifest.private);
