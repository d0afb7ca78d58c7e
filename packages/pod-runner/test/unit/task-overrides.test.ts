import { ErrorCode } from '@rollcall/core';
import { describe, expect, it } from 'vitest';
import { assertTaskOverrides } from '../../src/task-overrides.js';
import { templateForSubmit, type ResolvedTemplate } from '../../src/templates.js';
import type { Task } from '../../src/task.js';

const template = (name: string, overrides?: ResolvedTemplate['rule']['overrides'], taskTypes?: string[]): ResolvedTemplate => ({
  rule: { name, template: { spec: { containers: [{ name: 'main', image: 'x' }] } }, ...(overrides ? { overrides } : {}), ...(taskTypes ? { taskTypes } : {}) },
  index: 0,
  template: { spec: { containers: [{ name: 'main', image: 'x' }] } },
});
const task = (extra: Partial<Task> = {}): Task => ({ taskId: 't1', taskType: 'report', ...extra });
const codeOf = (call: () => unknown) => {
  try {
    call();
  } catch (err) {
    return err as Error & { code?: string };
  }
  return undefined;
};

describe('what a task may set beyond its template (a rule\'s overrides)', () => {
  const strict = [template('reports', { env: ['LOG_LEVEL', 'REPORT_*'], labels: ['team.example.com/*'], annotations: [] })];

  it('a rule without overrides lets a task set anything, as before', () => {
    expect(templateForSubmit([template('open')], task({ env: { NODE_OPTIONS: '--inspect' }, labels: { app: 'x' }, annotations: { a: 'b' } })).rule.name).toBe('open');
  });

  it('listed names and prefixes pass', () => {
    expect(templateForSubmit(strict, task({ env: { LOG_LEVEL: 'debug', REPORT_DAY: 'mon' }, labels: { 'team.example.com/cost': 'a' } })).rule.name).toBe('reports');
  });

  it.each([
    [{ env: { NODE_OPTIONS: '--require /tmp/x.js' } }, 'the environment variable "NODE_OPTIONS"'],
    [{ env: { LOG_LEVEL: 'x', REPORTX: 'y' } }, 'the environment variable "REPORTX"'],
    [{ labels: { app: 'frontend' } }, 'the label "app"'],
    [{ annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' } }, 'the annotation "cluster-autoscaler.kubernetes.io/safe-to-evict"'],
  ] as const)('%j is INVALID_ARGUMENT naming the rule and the name', (extra, what) => {
    const err = codeOf(() => templateForSubmit(strict, task(extra as Partial<Task>)));
    expect(err?.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(err?.message).toContain(`task t1: template rule reports does not let a task set ${what}`);
  });

  it('no matching rule is INVALID_ARGUMENT, as before', () => {
    expect(codeOf(() => templateForSubmit([template('other', undefined, ['billing'])], task()))?.message).toContain('no template rule matches task t1 of type report');
  });

  it('a rule\'s overrides are checked when the runner starts: lists of names, "*" alone refused (leave the kind out instead)', () => {
    expect(() => assertTaskOverrides({ env: ['A', 'B_*'] }, 'templates[0]')).not.toThrow();
    for (const bad of [{ env: '*' }, { env: ['*'] }, { env: [''] }, { secrets: ['x'] }, 'all']) {
      expect(codeOf(() => assertTaskOverrides(bad, 'templates[0]'))?.code, JSON.stringify(bad)).toBe(ErrorCode.INVALID_CONFIG);
    }
  });
});
