import { describe, expect, it } from 'vitest';
import { classSizes, formatClass, MAX_CLASS_LINES, workspaceClassSizes } from '../src/class-sizes.js';

describe('no class over 300 lines', () => {
  it('in any packages/*/src', () => {
    expect(workspaceClassSizes().filter((c) => c.lines > MAX_CLASS_LINES).map(formatClass)).toEqual([]);
  });

  it('measures every class it should (the pod runner façade, the lease holder, the ZooKeeper session among them)', () => {
    const names = workspaceClassSizes().map((c) => `${c.file} ${c.name}`);
    expect(names).toEqual(expect.arrayContaining(['packages/pod-runner/src/runner.ts PodRunner', 'packages/core/src/lease-holder.ts LeaseHolder', 'packages/zookeeper/src/client.ts ZkSession']));
  });
});

describe('the check finds what it is for', () => {
  it('measures a declaration, an exported one and a class expression from the class keyword to the closing brace', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  m${i}() {}`).join('\n');
    const source = [`/** doc */`, `class A {`, body(3), `}`, `export class B {`, body(301), `}`, `const C = class {`, body(1), `};`].join('\n');
    expect(classSizes('planted.ts', source).map(formatClass)).toEqual(['planted.ts:2 A (5 lines)', 'planted.ts:7 B (303 lines)', 'planted.ts:310 (anonymous) (3 lines)']);
  });
});
