import { ErrorCode, silentLogger, systemClock } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import { describe, expect, it } from 'vitest';
import { createPodRunner } from '../../src/create-pod-runner.js';
import { DEFAULT_MAX_LOG_BYTES } from '../../src/log-writer.js';
import { DEFAULT_MAX_DONE, DEFAULT_RETAIN_DONE_MS, resolvePodRunnerOptions, type PodRunnerOptions } from '../../src/options.js';
import { DEFAULT_TIMEOUTS } from '../../src/task.js';
import type { TemplateRule } from '../../src/templates.js';

const templates: TemplateRule[] = [{ name: 'default', template: { spec: { containers: [{ name: 'main', image: 'x:1' }] } } }];

function optionError(options: unknown): { code: string; key?: string; message: string } {
  try {
    resolvePodRunnerOptions(options as PodRunnerOptions);
  } catch (err) {
    return err as { code: string; key?: string; message: string };
  }
  throw new Error('resolved, but an error was expected');
}

describe("the pod runner's options, by its schema", () => {
  it('every default is the schema’s', () => {
    const options = resolvePodRunnerOptions({ templates });
    expect(options).toMatchObject({
      name: 'rollcall',
      capacity: { total: 50, perType: {} },
      keepFailedPodsMs: 0,
      requeueDelayMs: 1000,
      requestTimeoutMs: 5000,
      watchSilenceTimeoutMs: 90_000,
      watchTimeoutSeconds: 300,
      records: { retainDoneMs: DEFAULT_RETAIN_DONE_MS },
      logs: { maxBytesPerTask: DEFAULT_MAX_LOG_BYTES },
    });
    // the runner's own timeouts: `unknown` is applied when read, so a task's recorded timeouts stay as before
    expect(options.timeouts).toEqual(DEFAULT_TIMEOUTS);
    expect(options.logger).toBe(silentLogger);
    expect(options.clock).toBe(systemClock);
    expect(options.templates).toBe(templates);
  });

  it('keeps what was given, objects only code gives untouched', () => {
    const clock = new ManualClock();
    const onStatus = () => {};
    const options = resolvePodRunnerOptions({ templates, name: 'batch', capacity: { total: 4, perType: { 'report.v2': 1 } }, timeouts: { start: 1500.5, queue: 60_000, run: undefined }, logs: false, clock, onStatus, records: { retainDoneMs: 60_000 } });
    expect(options).toMatchObject({ name: 'batch', capacity: { total: 4, perType: { 'report.v2': 1 } }, logs: false, records: { retainDoneMs: 60_000 } });
    expect(options.timeouts).toEqual({ ...DEFAULT_TIMEOUTS, start: 1500.5, queue: 60_000 });
    expect(options.clock).toBe(clock);
    expect(options.onStatus).toBe(onStatus);
    expect(Object.isFrozen(clock)).toBe(false);
    expect(resolvePodRunnerOptions({ templates, logs: { dir: '/var/log/tasks' } }).logs).toEqual({ dir: '/var/log/tasks', maxBytesPerTask: DEFAULT_MAX_LOG_BYTES });
  });

  it('drops ledger.maxDone with a warning, and reads ledger.retainDoneMs as records.retainDoneMs with one', () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_fields: unknown, message?: string) => void warnings.push(message ?? '') };
    const options = resolvePodRunnerOptions({ templates, logger, ledger: { maxDone: 10, retainDoneMs: 5000 } });
    expect(options.records).toEqual({ retainDoneMs: 5000 });
    expect('ledger' in options).toBe(false);
    expect(warnings).toEqual([expect.stringContaining('ledger.maxDone is ignored'), expect.stringContaining('ledger.retainDoneMs is deprecated')]);
    expect(resolvePodRunnerOptions({ templates, records: { retainDoneMs: 7 }, ledger: { retainDoneMs: 5000 } }).records).toEqual({ retainDoneMs: 7 });
    expect(DEFAULT_MAX_DONE).toBe(1000);
  });

  it.each([
    [{ name: 'Not_A_Label' }, 'name', 'a DNS label of at most 30 characters'],
    [{ capacity: { total: 0 } }, 'capacity.total', 'must be at least 1, got 0'],
    [{ capacity: { total: 2.5 } }, 'capacity.total', 'expected an integer, got 2.5'],
    [{ capacity: { perType: { report: 0 } } }, 'capacity.perType.report', 'must be at least 1, got 0'],
    [{ timeouts: { queue: -1 } }, 'timeouts.queue', 'must be greater than 0, got -1'],
    [{ timeouts: { start: Number.POSITIVE_INFINITY } }, 'timeouts.start', 'expected a number'],
    [{ records: { retainDoneMs: 0 } }, 'records.retainDoneMs', 'must be at least 1, got 0'],
    [{ logs: { maxBytesPerTask: 0 } }, 'logs.maxBytesPerTask', 'must be at least 1, got 0'],
    [{ requeueDelayMs: 0 }, 'requeueDelayMs', 'must be at least 1, got 0'],
    [{ watchTimeoutSeconds: true }, 'watchTimeoutSeconds', 'expected an integer, got true'],
    [{ onStatus: 'log' }, 'onStatus', 'is not valid: a function'],
  ])('%j is INVALID_CONFIG naming %s and the rule', (change, key, rule) => {
    const err = optionError({ templates, ...change });
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key });
    expect(err.message.startsWith(`[rollcall] [pod-runner] ${key}: `)).toBe(true);
    expect(err.message).toContain(rule);
    expect(err.message).toMatch(/\(from code\)$/);
  });

  it('an unknown or mistyped key is an error, with the key meant', () => {
    expect(optionError({ templates, capacty: { total: 3 } })).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'capacty.total' });
    expect(optionError({ templates, capacty: { total: 3 } }).message).toContain('did you mean capacity.total?');
    expect(optionError({ templates, timeouts: { pending: 1000 } })).toMatchObject({ key: 'timeouts.pending' });
    expect(optionError({ templates, keepFailedPods: 1000 }).message).toContain('did you mean keepFailedPodsMs?');
    // a name every object has is no key of the schema
    expect(optionError({ templates, constructor: 1 })).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'constructor' });
  });

  it('templates are required', () => {
    expect(optionError({})).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'templates' });
  });

  it('createPodRunner refuses a bad option before it reads a kubeconfig or contacts anything', async () => {
    const err = await createPodRunner({ templates, kubeconfig: '/nonexistent/kubeconfig', capacity: { total: 0 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'capacity.total' });
  });
});
