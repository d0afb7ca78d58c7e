import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { rejection } from '@rollcall/conformance';
import { ManualClock, MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import type { ApiClient } from '@rollcall/kube-client';
import { LeaderGate } from '../../src/leader-gate.js';
import { LEDGER_FORMAT, type QueuedEntry } from '../../src/ledger-format.js';
import { TaskLedger } from '../../src/task-ledger.js';
import { T0 } from './fixtures.js';

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const opened: Registry[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((r) => r.close()));
});

/** What reaches the API server: the ledger's requests, answered as a ConfigMap that exists would be. */
function recordingClient(sent: string[]): ApiClient {
  return {
    request: async (req: { method: string; body?: { data?: Record<string, string | null> } }) => {
      sent.push(`${req.method}${req.body?.data ? ` ${Object.keys(req.body.data).join(',')}` : ''}`);
      return req.method === 'GET' ? { metadata: { resourceVersion: '1' }, data: { format: String(LEDGER_FORMAT) } } : {};
    },
  } as unknown as ApiClient;
}

const queued = (taskId: string): QueuedEntry => ({ v: LEDGER_FORMAT, state: 'queued', task: { taskId, taskType: 'report' }, submittedAt: new Date(T0).toISOString(), specHash: 'h' });

describe('TaskLedger behind the leader gate', () => {
  it('sends no ledger patch once the renew deadline has passed (a process resumed from SIGSTOP): the write and what is pending are dropped, LEASE_LOST, left to the next leader', async () => {
    const clock = new ManualClock(T0);
    const registry = await createRegistry({ type: 'memory', identity: 'a' }, { store: new MemoryStore({ backend: new MemoryBackend(), cluster: 'ledger-fence' }), clock });
    opened.push(registry);
    const events: string[] = [];
    const gate = new LeaderGate(registry, 'pod-runner-test', 'a');
    gate.start({ elected: (token) => events.push(`elected ${token}`), lost: (reason) => events.push(`lost ${reason}`), fenced: (verb) => events.push(`fenced ${verb}`) });
    expect(await clock.advanceUntil(() => gate.isLeader, 5000)).toBe(true);

    const sent: string[] = [];
    const ledger = new TaskLedger({ client: recordingClient(sent), namespace: 'ns', runner: 'test', clock, logger: silent, retainDoneMs: 60_000, maxDone: 10, fence: (verb) => gate.fence(verb) });
    await ledger.load();
    await ledger.write('before', queued('before'));
    expect(sent).toEqual(['GET', 'PATCH task.before']);

    // the default renew deadline, 10 s, has passed by the elector's monotonic clock; no timer fired, no `lost` heard
    clock.jump(10_001);
    const first = ledger.write('after', queued('after'));
    const second = ledger.write('also-after', queued('also-after'));
    expect(await rejection(first)).toMatchObject({ code: 'LEASE_LOST', reason: 'renew-deadline' });
    expect(await rejection(second)).toMatchObject({ code: 'LEASE_LOST' });
    await ledger.idle();
    expect(sent).toEqual(['GET', 'PATCH task.before']);
    expect(ledger.writes).toBe(1);
    expect(events.filter((e) => e.startsWith('fenced'))).toEqual(['fenced patch']);

    // nothing is retried later either: the dropped entries are not sent when time moves on
    await clock.advance(60_000);
    expect(sent).toEqual(['GET', 'PATCH task.before']);
    await ledger.close();
    await gate.close();
  });
});
