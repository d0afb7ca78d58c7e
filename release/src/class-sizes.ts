/**
 * Classes longer than the style allows: STYLE.md's "no class over 300 lines",
 * in every `packages/*` `src` (the CLI and the conformance suite included: the
 * rule is about a class's jobs, not about what it ships in). The compiler
 * parses each file, so a class is measured from its `class` keyword (or its
 * decorators) to its closing brace, comments inside included.
 *
 *   npx tsx release/src/class-sizes.ts
 */
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { typeScriptFiles } from './import-cycles.js';
import { REPO_ROOT, workspacePackages } from './workspace.js';

/** The longest a class may be, in lines. */
export const MAX_CLASS_LINES = 300;

export interface ClassSize {
  /** Path relative to the repository root (or the name given to {@link classSizes}). */
  file: string;
  /** The class's name; `(anonymous)` for a class expression without one. */
  name: string;
  /** 1-based line of its start. */
  line: number;
  lines: number;
}

/** Every class declaration and expression in `source`, with its length in lines. */
export function classSizes(file: string, source: string): ClassSize[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: ClassSize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ file, name: node.name?.text ?? '(anonymous)', line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every class in every package's `src`. */
export function workspaceClassSizes(): ClassSize[] {
  return workspacePackages()
    .filter((pkg) => pkg.path.startsWith('packages/'))
    .flatMap((pkg) => typeScriptFiles(join(REPO_ROOT, pkg.path, 'src')))
    .map((abs) => relative(REPO_ROOT, abs))
    .flatMap((file) => classSizes(file, readFileSync(join(REPO_ROOT, file), 'utf8')));
}

/** `file:line Name (n lines)`, the form a finding is printed and asserted in. */
export const formatClass = (c: ClassSize): string => `${c.file}:${c.line} ${c.name} (${c.lines} lines)`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const all = workspaceClassSizes().sort((a, b) => b.lines - a.lines);
  for (const c of all.slice(0, 15)) console.log(formatClass(c));
  console.log(`${all.filter((c) => c.lines > MAX_CLASS_LINES).length} class(es) over ${MAX_CLASS_LINES} lines`);
}
