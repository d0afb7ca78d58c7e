/**
 * Import circles inside each workspace package: every relative `import`,
 * `export … from`, `import type` and `import('…')` between its TypeScript
 * files is an edge, and every strongly connected group of two or more files
 * (or a file importing itself) is a circle. Type-only edges count: a type two
 * files share belongs in a file below both.
 *
 *   npx tsx release/src/import-cycles.ts
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { REPO_ROOT, workspacePackages } from './workspace.js';

/** File (absolute path) → the files of the same package it imports. */
export type ImportGraph = Map<string, Set<string>>;

const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage']);

/** The package's own `.ts` sources (declaration files and build output aside). */
export function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : typeScriptFiles(path);
    return /\.(ts|tsx|mts|cts)$/.test(entry.name) && !/\.d\.[mc]?ts$/.test(entry.name) ? [path] : [];
  });
}

/** What `./x.js` names on disk: `./x.ts` (ESM source imports end in .js), or `./x/index.ts`. */
function resolveRelative(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(m|c)?js$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`, join(base, 'index.ts')];
  return candidates.find((c) => /\.(ts|tsx|mts|cts)$/.test(c) && existsSync(c) && statSync(c).isFile());
}

/** Every specifier the file imports, type-only and dynamic ones included (the compiler's own scanner). */
export function importSpecifiers(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

export function importGraph(files: readonly string[]): ImportGraph {
  const inGraph = new Set(files);
  return new Map(
    files.map((file) => {
      const targets = importSpecifiers(readFileSync(file, 'utf8'))
        .filter((s) => s.startsWith('.'))
        .map((s) => resolveRelative(file, s))
        .filter((t): t is string => t !== undefined && inGraph.has(t));
      return [file, new Set(targets)];
    }),
  );
}

/** Strongly connected groups that form a circle (Tarjan), each sorted, largest first. */
export function importCycles(graph: ImportGraph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];

  // Iterative so a deep chain of imports cannot overflow the call stack.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; targets: string[]; next: number }[] = [];
    const enter = (node: string) => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, targets: [...(graph.get(node) ?? [])], next: 0 });
    };
    enter(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.next < frame.targets.length) {
        const target = frame.targets[frame.next++]!;
        if (!index.has(target)) enter(target);
        else if (onStack.has(target)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== frame.node);
      if (group.length > 1 || graph.get(frame.node)?.has(frame.node)) groups.push(group.sort());
    }
  }
  return groups.sort((a, b) => b.length - a.length || a[0]!.localeCompare(b[0]!));
}

export interface PackageCycles {
  /** Package directory relative to the repository root. */
  path: string;
  /** Each circle's files, relative to the package directory. */
  cycles: string[][];
}

/** The circles of every workspace package (only packages that have one). */
export function workspaceImportCycles(): PackageCycles[] {
  return workspacePackages()
    .map((pkg) => ({
      path: pkg.path,
      cycles: importCycles(importGraph(typeScriptFiles(pkg.dir))).map((group) => group.map((file) => relative(pkg.dir, file))),
    }))
    .filter((p) => p.cycles.length > 0);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = workspaceImportCycles();
  for (const { path, cycles } of found) {
    for (const cycle of cycles) console.log(`${path}: ${cycle.length} files: ${cycle.join(' ')}`);
  }
  console.log(`${found.reduce((n, p) => n + p.cycles.length, 0)} import circle(s) under ${REPO_ROOT}`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
