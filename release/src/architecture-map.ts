import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { typeScriptFiles } from './import-cycles.js';
import { REPO_ROOT, workspacePackages } from './workspace.js';

/** The page that names every source file's room. */
export const ARCHITECTURE_PAGE = 'docs/architecture.md';

/** One package's source files, as the page must name them: paths relative to its `src/`. */
export interface PackageSources {
  /** e.g. `packages/core` */
  path: string;
  files: string[];
}

/**
 * The lines of the page that belong to a package: from a heading that names it in
 * backticks (`` ### `packages/core` ``) to the next heading of the same or a higher level.
 */
export function packageSection(page: string, packagePath: string): string | undefined {
  const lines = page.split('\n');
  const start = lines.findIndex((line) => /^#{2,6} /.test(line) && line.includes(`\`${packagePath}\``));
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((line, i) => i > start && /^#+ /.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The `.ts` paths a section names in backticks. */
export function namedFiles(section: string): Set<string> {
  return new Set([...section.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]!));
}

/**
 * What the page gets wrong: a source file it gives no room, a file it names that does
 * not exist, a package without a section. Empty when the page is the map of the tree.
 */
export function architectureProblems(page: string, packages: readonly PackageSources[]): string[] {
  return packages.flatMap(({ path, files }) => {
    const section = packageSection(page, path);
    if (section === undefined) return [`${path}: no section (a heading naming \`${path}\`)`];
    const named = namedFiles(section);
    const present = new Set(files);
    return [
      ...files.filter((f) => !named.has(f)).map((f) => `${path}/src/${f}: not named in its package's section`),
      ...[...named].filter((f) => !present.has(f)).map((f) => `${path}/src/${f}: named, but there is no such file`),
    ];
  });
}

/** Every workspace package under packages/ with its src files. */
export function workspaceSources(): PackageSources[] {
  return workspacePackages()
    .filter((p) => p.path.startsWith('packages/') && existsSync(join(p.dir, 'src')))
    .map((p) => ({ path: p.path, files: typeScriptFiles(join(p.dir, 'src')).map((f) => relative(join(p.dir, 'src'), f)).sort() }));
}

/** The check over the repository as it is. */
export function workspaceArchitectureProblems(): string[] {
  return architectureProblems(readFileSync(join(REPO_ROOT, ARCHITECTURE_PAGE), 'utf8'), workspaceSources());
}
