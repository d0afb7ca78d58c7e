import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, type Registry } from '@rollcall/core';
import { sampleValue, scrapeMetrics, scrapeUntil } from '@rollcall/tools/test-kit';
import { Registry as PromRegistry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRollcallMetrics, serveMetrics, type MetricsServer } from '../src/index.js';

const WAIT_MS = 10_000;
const timing = {
  election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  member: { heartbeatIntervalMs: 500, leaseDurationMs: 3000 },
};

let dir: string;
let app: Registry;
let peer: Registry;
let server: MetricsServer;
let url: string;

async function open(identity: string): Promise<Registry> {
  return createRegistry({ type: 'sqlite', cluster: 'metrics', identity, sqlite: { path: join(dir, 'registry.db') }, ...timing });
}


beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollcall-metrics-test-'));
  app = await open('app');
  const prom = new PromRegistry();
  registerRollcallMetrics(app, prom, { roles: ['worker'], elections: ['scheduler'] });
  server = await serveMetrics(prom, { port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${server.port}/metrics`;
  peer = await open('peer');
});

afterAll(async () => {
  await server?.close();
  await peer?.close();
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('metrics of a registry on sqlite, scraped over HTTP in the text format', () => {
  it('the backend, the connection, members, the observed leader and this process\'s own leadership and lock', async () => {
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const first = await scrapeMetrics(url);
    expect(sampleValue(first, 'rollcall_registry_info', { backend: 'sqlite', cluster: 'metrics' })).toBe(1);
    expect(sampleValue(first, 'rollcall_connection_state', { state: 'connected' })).toBe(1);

    const worker = await peer.announce({ role: 'worker', id: 'w1', payload: { load: 0.5 } });
    const leadership = peer.campaign('scheduler');
    const token = await leadership.whenElected(AbortSignal.timeout(WAIT_MS));
    const seen = await scrapeUntil(url, 'the peer\'s worker and leadership', (s) => sampleValue(s, 'rollcall_members', { role: 'worker' }) === 1 && sampleValue(s, 'rollcall_election_leader_present', { election: 'scheduler' }) === 1, WAIT_MS);
    expect(sampleValue(seen, 'rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
    expect(sampleValue(seen, 'rollcall_watch_events_total', { type: 'put' })).toBeGreaterThanOrEqual(1);

    const lock = await app.lock('nightly', { timeoutMs: WAIT_MS });
    const own = app.campaign('reports');
    const ownToken = await own.whenElected(AbortSignal.timeout(WAIT_MS));
    const held = await scrapeMetrics(url);
    expect(sampleValue(held, 'rollcall_lock_held', { lock: 'nightly' })).toBe(1);
    expect(sampleValue(held, 'rollcall_lock_fencing_token', { lock: 'nightly' })).toBe(lock.fencingToken);
    expect(sampleValue(held, 'rollcall_election_leader', { election: 'reports' })).toBe(1);
    expect(sampleValue(held, 'rollcall_election_fencing_token', { election: 'reports' })).toBe(ownToken);
    // Every write went through sqlite: create for the lock and the term, then renewals.
    expect(sampleValue(held, 'rollcall_backend_requests_total', { operation: 'create', code: 'OK' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(held, 'rollcall_backend_request_duration_seconds_count', { operation: 'create', code: 'OK' })).toBe(sampleValue(held, 'rollcall_backend_requests_total', { operation: 'create', code: 'OK' }));

    await worker.withdraw();
    await leadership.resign();
    await lock.release();
    const after = await scrapeUntil(url, 'the worker gone and the election free', (s) => sampleValue(s, 'rollcall_members', { role: 'worker' }) === 0 && sampleValue(s, 'rollcall_election_leader_present', { election: 'scheduler' }) === 0, WAIT_MS);
    expect(sampleValue(after, 'rollcall_member_events_total', { role: 'worker', event: 'removed', reason: 'deleted' })).toBe(1);
    expect(sampleValue(after, 'rollcall_lock_held', { lock: 'nightly' })).toBe(0);
    expect(sampleValue(after, 'rollcall_lock_changes_total', { lock: 'nightly', event: 'lost', reason: 'released' })).toBe(1);
  });

  it('answers 404 off /metrics and 405 to a write', async () => {
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    expect((await fetch(url, { method: 'POST' })).status).toBe(405);
  });
});
