import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { electionKey, formatMicroTime, lockKey, memberKey, type LeaseRecord } from '@rollcall/core/spi';
import { createRegistry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { createSqliteStore } from '@rollcall/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { run, Running, sqliteFixture } from './cli.js';

let fx: Awaited<ReturnType<typeof sqliteFixture>>;
afterAll(async () => {
  await fx?.close();
});

describe('no command but the demo creates a sqlite database', () => {
  it.each([['members'], ['leader'], ['locks'], ['release', 'nightly', '--yes']])('%s on a path that does not exist: NOT_FOUND naming the path, exit 6, no file', async (command, ...args) => {
    fx ??= await sqliteFixture('ro');
    const path = join(fx.dir, `${command}-missing.db`);
    const r = await run([command, ...args, '-t', 'sqlite', '-o', `registry.sqlite.path=${path}`]);
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^rollcall: error NOT_FOUND \[sqlite\]: registry\.sqlite\.path: /);
    expect(r.stderr).toContain(path);
    expect(r.stderr).toContain('REGISTRY_SQLITE_PATH');
    expect(readdirSync(fx.dir).filter((f) => f.startsWith(`${command}-missing`))).toEqual([]);
  });

  it('-t sqlite without a path, where there is no rollcall.db: NOT_FOUND naming ./rollcall.db, and none is created', async () => {
    fx ??= await sqliteFixture('ro');
    const cwd = join(fx.dir, 'empty');
    mkdirSync(cwd);
    const r = await run(['members', '-t', 'sqlite'], { cwd });
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(join(cwd, 'rollcall.db'));
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('doctor reports the missing file as a failed connection check (exit 8) and creates nothing', async () => {
    fx ??= await sqliteFixture('ro');
    const path = join(fx.dir, 'doctor-missing.db');
    const r = await run(['doctor', '-t', 'sqlite', '-o', `registry.sqlite.path=${path}`, '--json']);
    expect(r.code).toBe(8);
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: { name: string; status: string; code?: string; detail: string }[] };
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.name === 'connection')).toMatchObject({ status: 'fail', code: 'NOT_FOUND', detail: expect.stringContaining(path) });
    // Where the read-only setting came from, as for every other key.
    expect(report.checks.find((c) => c.name === 'configuration')!.detail).toContain('registry.readOnly=true (command)');
    expect(readdirSync(fx.dir).filter((f) => f.startsWith('doctor-missing'))).toEqual([]);
  });

  it('migrate status: a sqlite side that does not exist is shown empty and named, not created; neither existing is NOT_FOUND', async () => {
    fx ??= await sqliteFixture('ro');
    await (await fx.open('on-from')).announce({ role: 'master', id: 'on-from' }); // phase 1: a process runs on from
    const to = join(fx.dir, 'to-missing.db');
    const sides = (from: string) => ['migrate', 'status', '-t', 'migrate', '-c', 'ro', '-o', 'migrate.from.type=sqlite', '-o', `migrate.from.sqlite.path=${from}`, '-o', 'migrate.to.type=sqlite', '-o', `migrate.to.sqlite.path=${to}`];
    const r = await run([...sides(fx.path), '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { missing: Record<string, string> }).missing).toEqual({ to: expect.stringContaining(to) });
    const text = await run(sides(fx.path));
    expect(text.stdout).toContain(`to: registry.sqlite.path: ${to} does not exist`);

    const both = await run(sides(join(fx.dir, 'from-missing.db')));
    expect(both.code).toBe(6);
    expect(both.stderr).toContain('from-missing.db');
    expect(readdirSync(fx.dir).filter((f) => f.includes('-missing'))).toEqual([]);
  });

  it('on an existing registry, a read command reads what the writers wrote', async () => {
    fx ??= await sqliteFixture('ro');
    const holder = await fx.open('holder');
    const token = await holder.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    const r = await run(['leader', 'scheduler', ...fx.args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'scheduler', holder: 'holder', fencingToken: token });
  });
});

/** A record as a process that died 60 s ago left it: last renewed then, with a 3 s lease. */
function leftBehind(holder: string, payload?: unknown): LeaseRecord {
  const then = formatMicroTime(new Date(Date.now() - 60_000));
  return { holderIdentity: holder, leaseDurationSeconds: 3, acquireTime: then, renewTime: then, leaseTransitions: 1, ...(payload === undefined ? {} : { payload: payload as never }) };
}

describe('read commands: STALE markers, --check, and nothing written', () => {
  it('members, leader and locks mark what a dead process left as STALE, exit 8 under --check, and leave every record as it was', async () => {
    const stale = await sqliteFixture('stale');
    try {
      const live = await stale.open('live');
      await live.announce({ role: 'worker', id: 'live' });
      const store = await createSqliteStore({ path: stale.path, cluster: 'stale' });
      await store.create(memberKey('worker', 'ghost'), leftBehind('ghost', { n: 1 }));
      await store.create(electionKey('scheduler'), leftBehind('ghost'));
      await store.create(lockKey('nightly'), leftBehind('ghost'));
      const versions = async () => (await Promise.all(['member/', 'election/', 'lock/'].map((p) => store.list(p)))).flatMap((l) => l.records.filter((r) => r.key !== memberKey('worker', 'live')).map((r) => `${r.key}@${r.version}`)).sort(); // the live member heartbeats
      const before = await versions();

      const members = await run(['members', ...stale.args]);
      expect(members.code, members.stderr).toBe(0);
      expect(members.stdout).toMatch(/^worker +ghost +\d+ +1m0\ds STALE /m);
      expect(members.stdout).toMatch(/^worker +live +\d+ +\d+\.\ds +/m);
      expect(members.stdout).not.toMatch(/^worker +live .*STALE/m);
      expect(members.stdout).toContain("STALE: last renewal older than its lease by this machine's clock (advisory");
      const json = JSON.parse((await run(['members', ...stale.args, '--json'])).stdout) as { id: string; stale: boolean; leaseDurationMs: number }[];
      expect(json.map((m) => [m.id, m.stale, m.leaseDurationMs])).toEqual([['ghost', true, 3000], ['live', false, 3000]]);

      for (const command of ['members', 'leader', 'locks']) {
        const checked = await run([command, ...stale.args, '--check']);
        expect(checked.code, `${command}: ${checked.stderr}`).toBe(8);
        expect(checked.stderr).toBe(`rollcall: 1 STALE entry (--check)\n`);
        expect(checked.stdout).toMatch(/ghost .*STALE/);
      }
      expect((await run(['members', 'nobody', ...stale.args, '--check'])).code).toBe(0);

      // A watch longer than the lease judges the ghost itself: expired, whoever (nobody here) deletes it.
      const w = Running.start(['watch', ...stale.args, '--json']);
      try {
        await w.until('the ghost to expire', (out) => out.split('\n').filter(Boolean).some((l) => /"type":"removed"/.test(l) && /"id":"ghost"/.test(l) && /"reason":"expired"/.test(l)), 15_000);
      } finally {
        w.child.kill('SIGINT');
      }
      expect((await w.exited).code).toBe(130);
      expect(await versions()).toEqual(before);
      await store.close();
    } finally {
      await stale.close();
    }
  });
});

describe('read commands: a member is judged by the liveness its record declares', () => {
  it('a live reaper-mode member, whose member record is never renewed (its heartbeat record is), is not STALE in members, --check or watch', async () => {
    const fx = await sqliteFixture('reaper');
    const member = await createRegistry({ type: 'sqlite', cluster: 'reaper', identity: 'r1', sqlite: { path: fx.path }, member: { liveness: 'reaper', heartbeatIntervalMs: 500, leaseDurationMs: 3000 } });
    try {
      await member.announce({ role: 'worker', id: 'r1' });
      type Row = { id: string; stale: boolean; acquireTime: string; heartbeatAgeMs: number; leaseDurationMs: number };
      let row: Row | undefined;
      // Up longer than its lease: its member record's renewTime (the announce) is then older than the lease.
      await waitFor(async () => {
        row = (JSON.parse((await run(['members', ...fx.args, '--json'])).stdout) as Row[])[0];
        return row !== undefined && Date.now() - Date.parse(row.acquireTime) > row.leaseDurationMs + 500;
      }, 30_000, 'the member to be up longer than its lease');
      expect(row).toMatchObject({ id: 'r1', stale: false });
      expect(row!.heartbeatAgeMs).toBeLessThan(row!.leaseDurationMs);
      const checked = await run(['members', ...fx.args, '--check']);
      expect(checked.code, checked.stdout + checked.stderr).toBe(0);
      expect(checked.stdout).not.toContain('STALE');
      const w = Running.start(['watch', ...fx.args]);
      try {
        await w.until('the watch to start', (out, err) => out.includes('worker/r1') && err.includes('watching cluster reaper'));
        expect(w.stdout).not.toContain('STALE');
      } finally {
        w.child.kill('SIGINT');
      }
      expect((await w.exited).code).toBe(130);
    } finally {
      await member.close();
      await fx.close();
    }
  });
});

describe('watch: what a dead process left is STALE from the first screen', () => {
  it('marks the dead leader, lock holder and member STALE as leader, locks and members do, the live ones not, and reports them gone a lease later', async () => {
    const fx = await sqliteFixture('stalewatch');
    try {
      const live = await fx.open('live');
      await live.announce({ role: 'worker', id: 'live' });
      const token = await live.campaign('reports').whenElected(AbortSignal.timeout(10_000));
      const store = await createSqliteStore({ path: fx.path, cluster: 'stalewatch' });
      await store.create(memberKey('worker', 'ghost'), leftBehind('ghost', { n: 1 }));
      await store.create(electionKey('scheduler'), leftBehind('ghost'));
      await store.create(lockKey('nightly'), leftBehind('ghost'));
      await store.close();
      // The listings' verdict, for comparison: the same three entries.
      const leader = await run(['leader', ...fx.args, '--json']);
      expect((JSON.parse(leader.stdout) as { name: string; stale: boolean }[]).map((r) => [r.name, r.stale])).toEqual([['reports', false], ['scheduler', true]]);

      const text = Running.start(['watch', ...fx.args]);
      const json = Running.start(['watch', ...fx.args, '--json']);
      try {
        const mark = "STALE \\(renewed 1m0\\ds ago by its writer's clock, lease 3\\.0s\\)";
        await text.until('the first screen', (out) => out.includes('lock      acquired nightly'));
        expect(text.stdout).toMatch(new RegExp(`^\\S+ {2}election {2}leader {3}scheduler {2}ghost {2}fencing token 1 {2}${mark}$`, 'm'));
        expect(text.stdout).toMatch(new RegExp(`^\\S+ {2}lock {6}acquired nightly {2}ghost {2}fencing token 1 {2}${mark}$`, 'm'));
        expect(text.stdout).toMatch(new RegExp(`^\\S+ {2}member {4}added {4}worker/ghost .*\\{"n":1\\} {2}${mark}$`, 'm'));
        expect(text.stdout).toMatch(new RegExp(`^\\S+ {2}election {2}leader {3}reports {2}live {2}fencing token ${token}$`, 'm'));
        expect(text.stdout).toMatch(/^\S+ {2}member {4}added {4}worker\/live {2}incarnation \S+ {2}null$/m);
        expect(text.stdout).not.toMatch(/live .*STALE/);

        const events = () => json.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
        await json.until('the first screen', () => events().some((e) => e.kind === 'lock'));
        expect(events()).toEqual(expect.arrayContaining([
          expect.objectContaining({ kind: 'election', type: 'leader', election: 'scheduler', leader: 'ghost', stale: true, leaseDurationMs: 3000 }),
          expect.objectContaining({ kind: 'lock', type: 'acquired', lock: 'nightly', holder: 'ghost', stale: true }),
          expect.objectContaining({ kind: 'member', type: 'added', id: 'ghost', stale: true }),
        ]));
        expect(events().filter((e) => e.stale).map((e) => e.leader ?? e.holder ?? e.id).sort()).toEqual(['ghost', 'ghost', 'ghost']);

        // A lease later the watch judges them itself: gone, as the library judges it.
        await text.until('the dead leader gone', (out) => /election {2}none {5}scheduler {2}no leader \(was ghost\)/.test(out), 15_000);
        await text.until('the dead lock holder gone', (out) => /lock {6}expired {2}nightly {2}ghost/.test(out), 15_000);
        await text.until('the dead member gone', (out) => /member {4}removed {2}worker\/ghost .*\(expired\)/.test(out), 15_000);
      } finally {
        text.child.kill('SIGINT');
        json.child.kill('SIGINT');
      }
      expect((await text.exited).code).toBe(130);
      expect((await json.exited).code).toBe(130);
    } finally {
      await fx.close();
    }
  });
});

describe('read commands: a pod member is judged by its pod, never STALE', () => {
  it('members shows a pod member this reader cannot judge (no pod readiness here) as UNVERIFIED, not STALE, and --check does not count it', async () => {
    const fx = await sqliteFixture('podrec');
    try {
      const store = await createSqliteStore({ path: fx.path, cluster: 'podrec' });
      // Announced 60 s ago and never rewritten, as a pod member is: its renewTime is no heartbeat.
      await store.create(memberKey('worker', 'in-pod'), { ...leftBehind('in-pod', { n: 1 }), liveness: { mode: 'pod', podUid: 'uid-1' } });
      const members = await run(['members', ...fx.args]);
      expect(members.code, members.stderr).toBe(0);
      expect(members.stdout).toMatch(/^worker +in-pod +\d+ +1m0\ds UNVERIFIED /m);
      expect(members.stdout).not.toContain('STALE');
      expect(members.stdout).toContain('UNVERIFIED: a pod member whose pod readiness this identity may not read');
      const json = JSON.parse((await run(['members', ...fx.args, '--json'])).stdout) as { id: string; stale: boolean; judgedBy?: string }[];
      expect(json).toMatchObject([{ id: 'in-pod', stale: false, judgedBy: 'unverified' }]);
      expect((await run(['members', ...fx.args, '--check'])).code).toBe(0);
      await store.close();
    } finally {
      await fx.close();
    }
  });
});
