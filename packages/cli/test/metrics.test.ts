import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { Registry } from '@rollcall/core';
import { sampleValue, scrapeMetrics, scrapeUntil } from '@rollcall/tools/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, Running, sqliteFixture } from './cli.js';

const WAIT_MS = 15_000;

let fx: Awaited<ReturnType<typeof sqliteFixture>>;
let peer: Registry;

beforeAll(async () => {
  fx = await sqliteFixture('metrics');
  peer = await fx.open('peer');
  await peer.announce({ role: 'worker', id: 'worker-1', payload: { status: 'NORMAL' } });
});

afterAll(async () => {
  await fx?.close();
});


describe('rollcall watch --metrics-port', () => {
  it('serves the cluster as a Prometheus exporter: members by role, every election, the connection, backend traffic; Ctrl-C stops it', async () => {
    const w = Running.start(['watch', ...fx.args, '--metrics-port', '0']);
    let url = '';
    try {
      const port = await w.until('the metrics address', (_out, err) => /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(err)?.[1]);
      url = `http://127.0.0.1:${port}/metrics`;
      await w.until('the watch to start', (_out, err) => err.includes('watching cluster metrics'));
      const first = await scrapeMetrics(url);
      expect(sampleValue(first, 'rollcall_registry_info', { backend: 'sqlite', cluster: 'metrics' })).toBe(1);
      expect(sampleValue(first, 'rollcall_connection_state', { state: 'connected' })).toBe(1);
      expect(sampleValue(first, 'rollcall_members', { role: 'worker' })).toBe(1);
      // The process's own metrics come with them.
      expect(sampleValue(first, 'process_cpu_seconds_total')).toBeGreaterThan(0);

      const leadership = peer.campaign('scheduler');
      const token = await leadership.whenElected(AbortSignal.timeout(WAIT_MS));
      await peer.announce({ role: 'master', id: 'master-1' });
      const seen = await scrapeUntil(url, 'the leader and the master', (s) => sampleValue(s, 'rollcall_election_leader_present', { election: 'scheduler' }) === 1 && sampleValue(s, 'rollcall_members', { role: 'master' }) === 1, WAIT_MS);
      expect(sampleValue(seen, 'rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
      expect(sampleValue(seen, 'rollcall_member_events_total', { role: 'master', event: 'added' })).toBe(1);
      expect(sampleValue(seen, 'rollcall_watch_events_total', { type: 'put' })).toBeGreaterThanOrEqual(2);

      await leadership.resign();
      const after = await scrapeUntil(url, 'no leader', (s) => sampleValue(s, 'rollcall_election_leader_present', { election: 'scheduler' }) === 0, WAIT_MS);
      expect(sampleValue(after, 'rollcall_election_leader_changes_total', { election: 'scheduler' })).toBe(1);
    } finally {
      w.child.kill('SIGINT');
    }
    expect((await w.exited).code).toBe(130);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('rollcall demo --metrics-port: the view\'s metrics while the demo runs — its workers joining, the failover of scheduler', async () => {
    const demo = Running.start(['demo', '--metrics-port', '0']);
    try {
      const port = await demo.until('the metrics address', (_out, err) => /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(err)?.[1], 60_000);
      const url = `http://127.0.0.1:${port}/metrics`;
      // Counters only grow: reached while the demo runs, they stay until it ends.
      const seen = await scrapeUntil(url, 'four workers added and a leader again after the first one went', (s) => sampleValue(s, 'rollcall_member_events_total', { role: 'worker', event: 'added' }) === 4 && (sampleValue(s, 'rollcall_election_leader_changes_total', { election: 'scheduler' }) ?? 0) >= 2 && sampleValue(s, 'rollcall_election_leader_present', { election: 'scheduler' }) === 1, 60_000);
      expect(sampleValue(seen, 'rollcall_members', { role: 'master' })).toBeLessThanOrEqual(3);
      expect(sampleValue(seen, 'rollcall_election_fencing_token', { election: 'scheduler' })).toBeGreaterThanOrEqual(2);
      expect((await demo.exited).code).toBe(0);
    } finally {
      demo.child.kill('SIGINT');
    }
  });

  it('binds 127.0.0.1 unless --metrics-host says otherwise (0.0.0.0: every interface, said so)', async () => {
    const listening = (port: string) => execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim().split(/\s+/)[3];
    for (const [flags, address] of [[[], '127.0.0.1'], [['--metrics-host', '0.0.0.0'], '0.0.0.0']] as const) {
      const w = Running.start(['watch', ...fx.args, '--metrics-port', '0', ...flags]);
      try {
        const port = await w.until('the metrics address', (_out, err) => /metrics at http:\/\/(?:127\.0\.0\.1|localhost):(\d+)\/metrics/.exec(err)?.[1]);
        expect(listening(port)).toBe(`${address}:${port}`);
        expect(w.stderr.includes('(every interface)')).toBe(address === '0.0.0.0');
      } finally {
        w.child.kill('SIGINT');
        await w.exited;
      }
    }
  });

  it('a port that is not one is a USAGE error, exit 2, before anything connects', async () => {
    for (const command of ['watch', 'demo']) {
      const r = await run([command, ...fx.args, '--metrics-port', 'http']);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^rollcall: error USAGE: --metrics-port "http": expected a TCP port, 0 to 65535/);
    }
  });

  it('a port in use is a USAGE error naming it, exit 2', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await run(['watch', ...fx.args, '--metrics-port', String(port)]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--metrics-port ${port}: cannot listen (EADDRINUSE)`);
    } finally {
      taken.close();
    }
  });
});
