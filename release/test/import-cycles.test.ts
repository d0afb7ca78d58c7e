import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importCycles, importGraph, importSpecifiers, typeScriptFiles, workspaceImportCycles } from '../src/import-cycles.js';

describe('no workspace package has an import circle, type-only ones included', () => {
  it('every package under packages/, tools, e2e and release', () => {
    expect(workspaceImportCycles()).toEqual([]);
  });
});

describe('the check finds what it is for', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-import-cycles-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (files: Record<string, string>) => {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return importGraph(typeScriptFiles(dir));
  };

  it('reads import, import type, export from and import(), not comments or strings', () => {
    const source = ["import { a } from './a.js';", "import type { B } from './b.js';", "export * from './c.js';", "type D = import('./d.js').D;", "// import { e } from './e.js';", "const f = \"import './f.js'\";"].join('\n');
    expect(importSpecifiers(source)).toEqual(['./a.js', './b.js', './c.js', './d.js']);
  });

  it('a type-only circle through a folder index, and not a chain', () => {
    const graph = write({
      'src/a.ts': "import type { B } from './b.js';\nexport type A = B;",
      'src/b.ts': "import type { C } from './c/index.js';\nexport type B = C;",
      'src/c/index.ts': "export type { A as C } from '../a.js';",
      'src/chain.ts': "import type { A } from './a.js';\nexport type Chain = A;",
      'src/self.ts': "export type { Self } from './self.js';\nexport type Self = 1;",
    });
    expect(importCycles(graph).map((group) => group.map((f) => f.slice(dir.length + 1)))).toEqual([['src/a.ts', 'src/b.ts', 'src/c/index.ts'], ['src/self.ts']]);
  });
});
