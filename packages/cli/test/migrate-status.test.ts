import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeMigration, type MigrationVerdict, type SideView } from '../src/commands/migrate-status.js';
import { run } from './cli.js';

// A migration between two real sqlite files, sides of one cluster: status reads each side on its own.
const dir = mkdtempSync(join(tmpdir(), 'rollcall-cli-migrate-'));
const paths = { from: join(dir, 'old.db'), to: join(dir, 'new.db') };
const timings = {
  election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  member: { heartbeatIntervalMs: 500, leaseDurationMs: 3000 },
};
const args = ['-t', 'migrate', '-c', 'ops', '-o', 'migrate.from.type=sqlite', '-o', `migrate.from.sqlite.path=${paths.from}`, '-o', 'migrate.to.type=sqlite', '-o', `migrate.to.sqlite.path=${paths.to}`];
const opened: Registry[] = [];

async function open(identity: string, phase: 'from' | 'migrate' | 'to'): Promise<Registry> {
  const side = (p: string) => ({ type: 'sqlite', sqlite: { path: p } });
  const config = phase === 'migrate' ? { type: 'migrate', migrate: { from: side(paths.from), to: side(paths.to) } } : { type: 'sqlite', sqlite: { path: paths[phase] } };
  const registry = await createRegistry({ ...config, cluster: 'ops', identity, ...timings });
  opened.push(registry);
  await registry.announce({ role: 'master', id: identity });
  return registry;
}

async function status(): Promise<{ code: number | null; verdict: MigrationVerdict; json: Record<string, unknown> }> {
  const r = await run(['migrate', 'status', ...args, '--json']);
  const json = JSON.parse(r.stdout) as Record<string, unknown> & { verdict: MigrationVerdict };
  return { code: r.code, verdict: json.verdict, json };
}

async function close(registry: Registry): Promise<void> {
  await registry.close();
  opened.splice(opened.indexOf(registry), 1);
}

beforeAll(() => undefined);
afterAll(async () => {
  await Promise.allSettled(opened.map((r) => r.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('rollcall migrate status', () => {
  it('follows a rolling restart through its phases, exit 0 while the next step is safe and 9 when it is not', async () => {
    // Phase 1: one process on from, leading and having held a lock once.
    const a = await open('a', 'from');
    await a.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    await (await a.lock('nightly', { timeoutMs: 10_000 })).release();
    let s = await status();
    expect(s.verdict).toMatchObject({ phase: 1, safe: true });
    expect(s.code).toBe(0);
    expect(s.json).toMatchObject({ backends: { from: 'sqlite', to: 'sqlite' }, from: { members: ['master/a'], elections: { scheduler: { holder: 'a', fencingToken: 1 } } }, to: { members: [] } });

    // Phase 2 under way: b migrates while a is still on from.
    const b = await open('b', 'migrate');
    b.campaign('scheduler');
    s = await status();
    expect(s.verdict).toMatchObject({ phase: 2, safe: true });
    expect(s.verdict.next).toMatch(/go on restarting with registry.type=migrate \(1 on from only: master\/a\)/);

    // A to-only process now would be a mix: never safe.
    const early = await open('early', 'to');
    s = await status();
    expect(s.code).toBe(9);
    expect(s.verdict).toMatchObject({ phase: 0, safe: false });
    expect(s.verdict.reasons.join()).toContain('two could lead');
    await close(early);

    // a moves to migrate: b takes the election on both sides; the lock was never held during phase 2.
    await close(a);
    const a2 = await open('a2', 'migrate');
    await waitFor(async () => (await status()).verdict.phase === 2 && (await status()).verdict.reasons.every((r) => !r.includes('election')), 15_000, 'b to lead on both sides');
    s = await status();
    expect(s.code).toBe(9);
    expect(s.verdict.reasons).toEqual([expect.stringMatching(/^lock nightly: its token on to \(0\) is below from's \(1\)/)]);
    await (await a2.lock('nightly', { timeoutMs: 10_000 })).release();
    s = await status();
    expect(s.verdict).toMatchObject({ phase: 2, safe: true, reasons: [] });
    expect(s.code).toBe(0);
    expect(s.verdict.next).toMatch(/^phase 3/);
  });

  it('prints a table with each member, each election and lock on each side, and the verdict', async () => {
    const r = await run(['migrate', 'status', ...args]);
    expect(r.stdout).toMatch(/MEMBER\s+ON\n/);
    expect(r.stdout).toMatch(/master\/b\s+both/);
    expect(r.stdout).toMatch(/election\s+scheduler\s+b #\d+\s+b #\d+/);
    expect(r.stdout).toMatch(/verdict: (safe|NOT safe)/);
  });

  it('another registry.type is a usage error, exit 2', async () => {
    const r = await run(['migrate', 'status', '-t', 'sqlite', '-o', `sqlite.path=${paths.from}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('needs registry.type=migrate');
  });
});

describe('the verdict', () => {
  const view = (members: string[], holder?: string | null, token = 1): SideView => ({ members, elections: holder === undefined ? {} : { e: { holder, fencingToken: token } }, locks: {} });
  it('phase 3 under way is safe to go on; every process on to is done, unless from still has a live holder', () => {
    expect(judgeMigration(view(['m/a']), view(['m/a', 'm/b']))).toMatchObject({ phase: 3, safe: true });
    expect(judgeMigration(view([]), view(['m/a', 'm/b']))).toMatchObject({ phase: 4, safe: true });
    expect(judgeMigration(view([], 'old'), view(['m/a']))).toMatchObject({ phase: 4, safe: false, reasons: ['election e is still held on from by old: some process still writes there'] });
  });
  it('phase 2 complete is not ready while a holder holds on from only', () => {
    expect(judgeMigration(view(['m/a'], 'x', 4), view(['m/a'], null, 4))).toMatchObject({ phase: 2, safe: false });
  });
});
