import { describe, expect, it } from 'vitest';
import { clockReads, formatRead, librarySourceDirs, workspaceClockReads } from '../src/clock-reads.js';

describe('no library package reads time or arms a timer outside the injected Clock', () => {
  it('every packages/*/src but the CLI and the conformance suite; only core clock.ts may', () => {
    expect(workspaceClockReads().map(formatRead)).toEqual([]);
  });

  it('covers the library packages and not the exempt ones', () => {
    const dirs = librarySourceDirs();
    expect(dirs).toEqual(expect.arrayContaining(['packages/core/src', 'packages/kubernetes/src', 'packages/pod-runner/src', 'packages/etcd/src']));
    expect(dirs).not.toContain('packages/cli/src');
    expect(dirs).not.toContain('packages/conformance/src');
  });
});

describe('the check finds what it is for', () => {
  const find = (source: string) => clockReads('planted.ts', source).map(formatRead);

  it('names file:line:column of each planted read', () => {
    const source = [
      "import { performance } from 'node:perf_hooks';",
      'const a = setTimeout(() => {}, 10);',
      'const b = setInterval(() => {}, 10);',
      'const c = Date.now();',
      'const d = performance.now();',
      'const e = new Date();',
      'const f = new Date;',
      'const g = globalThis.setTimeout(() => {}, 1);',
      'const h = process.hrtime.bigint();',
      'const i = Date();',
      'const now = Date.now;',
      'const later = [1].map(() => setTimeout);',
    ].join('\n');
    expect(find(source)).toEqual([
      'planted.ts:2:11 setTimeout(…)',
      'planted.ts:3:11 setInterval(…)',
      'planted.ts:4:11 Date.now',
      'planted.ts:5:11 performance.now',
      'planted.ts:6:11 new Date()',
      'planted.ts:7:11 new Date()',
      'planted.ts:8:11 globalThis.setTimeout(…)',
      'planted.ts:9:11 process.hrtime',
      'planted.ts:10:11 Date()',
      'planted.ts:11:13 Date.now',
      'planted.ts:12:29 setTimeout(…)',
    ]);
  });

  it('the timers modules, setImmediate aside', () => {
    const source = ["import { setTimeout as sleep } from 'node:timers/promises';", "import { setImmediate } from 'node:timers';", "import * as timers from 'timers';"].join('\n');
    expect(find(source)).toEqual(["planted.ts:1:1 import setTimeout from 'node:timers/promises'", "planted.ts:3:1 import * from 'timers'"]);
  });

  it('not comments, strings, the injected clock, a date from a value, or a member named setTimeout', () => {
    const source = [
      '// setTimeout(() => {}, 10); Date.now()',
      '/* performance.now() */',
      'const s = "setTimeout(f, 1) Date.now() new Date()";',
      'const t = `performance.now() ${1}`;',
      'clock.setTimeout(() => {}, 10);',
      'const n = clock.now();',
      'const w = clock.wallNow();',
      'const parsed = new Date(0);',
      'const ms = Date.parse("2026-01-01");',
      'const utc = Date.UTC(2026, 0, 1);',
      'interface C { setTimeout(fn: () => void, ms: number): void }',
      'const fake = { setTimeout(fn: () => void) { fn(); }, now: () => 0 };',
      'setImmediate(() => {});',
    ].join('\n');
    expect(find(source)).toEqual([]);
  });
});
