import type { Action } from '../../src/actions.js';
import { type Decision, decide, type DecideSettings, DEFAULT_DECIDE_SETTINGS, type Observed } from '../../src/decide.js';
import type { Pod } from '../../src/pod.js';
import type { TaskRecord, TaskRecordBody } from '../../src/task-record.js';
import type { TaskStatus, TaskTimeouts } from '../../src/task.js';
import { at, timeouts } from './fixtures.js';

/** The record of task t1 (runner `rollcall`, so its pods are `rollcall-t1-<attempt>`), queued at T0, written by term 1. */
export function record(body: Partial<TaskRecordBody> = {}, t: TaskTimeouts = timeouts(), extra: Partial<TaskRecord> = {}): TaskRecord {
  return {
    name: 'rollcall-task-t1-00000000',
    uid: 'u-t1',
    resourceVersion: '1',
    writeTerm: 1,
    body: { v: 2, state: 'queued', task: { taskId: 't1', taskType: 'report', tags: {}, attempt: 1, timeouts: t }, template: 'default', specHash: 'h1', submittedAt: at(0), seq: 0, ...body },
    ...extra,
  };
}

/** What term 1 observes of t1: `pods`, admitted, nothing delivered, every log stored; `change` on top. */
export function observed(pods: Pod[], change: Partial<Observed> = {}): Observed {
  return { runner: 'rollcall', term: 1, record: record(), pods, admitted: true, delivery: 'none', logsStored: () => true, ...change };
}

export const run = (o: Observed, now: number, settings: DecideSettings = DEFAULT_DECIDE_SETTINGS): Decision => decide(o, now, settings);

export const types = (d: Decision) => d.actions.map((a) => a.type);
export const ofType = <T extends Action['type']>(d: Decision, type: T) => d.actions.filter((a): a is Extract<Action, { type: T }> => a.type === type);
/** The record body written, if one was. */
export const written = (d: Decision) => ofType(d, 'writeRecord')[0];
/** The terminal status a write stored, if it did. */
export const ended = (d: Decision): TaskStatus | undefined => {
  const w = written(d);
  return w?.body.state === 'finished' ? w.body.status : undefined;
};
export const published = (d: Decision) => ofType(d, 'publish')[0]?.status;
