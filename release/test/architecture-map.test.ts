import { describe, expect, it } from 'vitest';
import { architectureProblems, workspaceArchitectureProblems } from '../src/architecture-map.js';

describe('docs/architecture.md names every source file of every package', () => {
  it('the repository as it is', () => {
    expect(workspaceArchitectureProblems()).toEqual([]);
  });
});

describe('the check finds what it is for', () => {
  const page = [
    '# Map',
    '## Packages',
    '### `packages/a`',
    '| room | files |',
    '|---|---|',
    '| entry | `index.ts`, `sub/deep.ts` |',
    '#### a detail inside the section',
    'also `gone.ts`',
    '### `packages/b`',
    'nothing here but `b.ts`',
    '## Elsewhere',
    'mentions `packages/a` `stray.ts` outside any section',
  ].join('\n');

  it('a file added and not named, a file named and gone, a package without a section', () => {
    expect(
      architectureProblems(page, [
        { path: 'packages/a', files: ['index.ts', 'stray.ts', 'sub/deep.ts'] },
        { path: 'packages/b', files: ['b.ts'] },
        { path: 'packages/c', files: ['c.ts'] },
      ]),
    ).toEqual([
      'packages/a/src/stray.ts: not named in its package\'s section',
      'packages/a/src/gone.ts: named, but there is no such file',
      'packages/c: no section (a heading naming `packages/c`)',
    ]);
  });

  it('a page that names everything passes', () => {
    expect(architectureProblems(page, [{ path: 'packages/a', files: ['gone.ts', 'index.ts', 'sub/deep.ts'] }, { path: 'packages/b', files: ['b.ts'] }])).toEqual([]);
  });
});
