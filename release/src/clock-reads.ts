/**
 * Timer and clock reads outside the injected `Clock`: in every library
 * package's `src` (each `packages/*` but the CLI and the conformance suite),
 * a call of the global `setTimeout` or `setInterval`, a read of `Date.now`,
 * `performance.now` or `process.hrtime`, `new Date()` or `Date()` without an
 * argument, and an import from `node:timers` or `node:timers/promises` (their
 * `setImmediate` aside) are findings. Only `packages/core/src/clock.ts`, where
 * `systemClock` wraps them, may hold them. The compiler parses each file, so a
 * comment or a string that mentions `setTimeout` is not a finding, and
 * `clock.setTimeout(…)` (a property of an injected clock) is not either.
 *
 *   npx tsx release/src/clock-reads.ts
 */
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { typeScriptFiles } from './import-cycles.js';
import { REPO_ROOT, workspacePackages } from './workspace.js';

/** The one file that may read time and arm timers: `systemClock` lives there. */
export const CLOCK_FILE = 'packages/core/src/clock.ts';

/** Packages outside the rule: an application (its process owns its clock) and the test suite. */
export const EXEMPT_PACKAGES: readonly string[] = ['packages/cli', 'packages/conformance'];

export interface ClockRead {
  /** Path relative to the repository root (or the name given to {@link clockReads}). */
  file: string;
  /** 1-based line and column. */
  line: number;
  column: number;
  /** What was read, e.g. `setTimeout(…)`, `Date.now`, `new Date()`. */
  what: string;
}

const GLOBAL_TIMERS = new Set(['setTimeout', 'setInterval']);
const GLOBAL_OWNERS = new Set(['globalThis', 'global', 'window', 'self']);
const TIME_READS: Record<string, Set<string>> = { Date: new Set(['now']), performance: new Set(['now']), process: new Set(['hrtime']) };
const TIMER_MODULES = new Set(['node:timers', 'timers', 'node:timers/promises', 'timers/promises']);

/** `x` when `node` is `x` or `globalThis.x` (and the like): the name a global is reached by. */
function globalName(node: ts.Expression): string | undefined {
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && GLOBAL_OWNERS.has(node.expression.text)) return node.name.text;
  return undefined;
}

/** Whether an identifier is a name being declared or a property name, not a reference to a global. */
function isDeclarationOrMemberName(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.name === node) return true;
  if ((ts.isMethodDeclaration(parent) || ts.isMethodSignature(parent) || ts.isPropertyDeclaration(parent) || ts.isPropertySignature(parent) || ts.isPropertyAssignment(parent)) && parent.name === node) return true;
  if ((ts.isFunctionDeclaration(parent) || ts.isVariableDeclaration(parent) || ts.isParameter(parent)) && parent.name === node) return true;
  return ts.isImportSpecifier(parent) || ts.isExportSpecifier(parent);
}

/** Every timer or clock read in one file's source text. */
export function clockReads(file: string, source: string): ClockRead[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: ClockRead[] = [];
  const report = (node: ts.Node, what: string) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    found.push({ file, line: line + 1, column: character + 1, what });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && TIMER_MODULES.has(node.moduleSpecifier.text)) {
      const bindings = node.importClause?.namedBindings;
      const names = bindings && ts.isNamedImports(bindings) ? bindings.elements.map((e) => (e.propertyName ?? e.name).text) : ['*'];
      for (const name of names.filter((n) => n !== 'setImmediate' && n !== 'clearImmediate')) report(node, `import ${name} from '${node.moduleSpecifier.text}'`);
      return;
    }
    if (ts.isIdentifier(node) && GLOBAL_TIMERS.has(node.text) && !isDeclarationOrMemberName(node)) {
      report(node, `${node.text}(…)`);
    } else if (ts.isPropertyAccessExpression(node) && GLOBAL_OWNERS.has(node.expression.getText(sf)) && GLOBAL_TIMERS.has(node.name.text)) {
      report(node, `${node.getText(sf)}(…)`);
    } else if (ts.isPropertyAccessExpression(node)) {
      const owner = globalName(node.expression);
      if (owner !== undefined && TIME_READS[owner]?.has(node.name.text)) report(node, `${owner}.${node.name.text}`);
    } else if (ts.isNewExpression(node) && globalName(node.expression) === 'Date' && (node.arguments?.length ?? 0) === 0) {
      report(node, 'new Date()');
    } else if (ts.isCallExpression(node) && globalName(node.expression) === 'Date') {
      report(node, 'Date()');
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The library packages' source folders the rule covers, relative to the repository root. */
export function librarySourceDirs(): string[] {
  return workspacePackages()
    .filter((pkg) => pkg.path.startsWith('packages/') && !EXEMPT_PACKAGES.includes(pkg.path))
    .map((pkg) => join(pkg.path, 'src'));
}

/** Every read outside `clock.ts` in every library package's `src`. */
export function workspaceClockReads(): ClockRead[] {
  return librarySourceDirs().flatMap((dir) =>
    typeScriptFiles(join(REPO_ROOT, dir))
      .map((abs) => relative(REPO_ROOT, abs))
      .filter((file) => file !== CLOCK_FILE)
      .flatMap((file) => clockReads(file, readFileSync(join(REPO_ROOT, file), 'utf8'))),
  );
}

/** `file:line:column what`, the form a finding is printed and asserted in. */
export const formatRead = (read: ClockRead): string => `${read.file}:${read.line}:${read.column} ${read.what}`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = workspaceClockReads();
  for (const read of found) console.log(formatRead(read));
  console.log(`${found.length} timer or clock read(s) outside ${CLOCK_FILE}`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
