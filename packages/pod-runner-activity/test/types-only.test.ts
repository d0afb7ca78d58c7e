import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { PendingCause, RunnerActivity, TaskPhase } from '../src/index.js';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies?: Record<string, string>; peerDependencies?: Record<string, string> };

describe('the pod runner activity package', () => {
  it('is types only: its entry exports no value, and it depends on nothing (metrics installs no runner and no client through it)', async () => {
    const entry = (await import('../dist/index.js')) as Record<string, unknown>;
    expect(Object.keys(entry)).toEqual([]);
    expect(Object.keys(manifest.dependencies ?? {})).toEqual([]);
    expect(Object.keys(manifest.peerDependencies ?? {})).toEqual([]);
  });

  it('names every kind of activity and its vocabulary (checked by tsc in the test script)', () => {
    expectTypeOf<RunnerActivity['type']>().toEqualTypeOf<'status' | 'pending' | 'requeue' | 'retry' | 'watchEnded' | 'request' | 'fenced' | 'closed'>();
    expectTypeOf<Extract<RunnerActivity, { type: 'status' }>['phase']>().toEqualTypeOf<TaskPhase>();
    expectTypeOf<Extract<RunnerActivity, { type: 'pending' }>['cause']>().toEqualTypeOf<PendingCause>();
    expectTypeOf<'queued'>().toExtend<TaskPhase>();
  });
});
