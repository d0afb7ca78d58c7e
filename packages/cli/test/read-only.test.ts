import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run, sqliteFixture } from './cli.js';

let fx: Awaited<ReturnType<typeof sqliteFixture>>;
afterAll(async () => {
  await fx?.close();
});

describe('read commands never create a sqlite database', () => {
  it.each([['members'], ['leader'], ['locks']])('%s on a path that does not exist: NOT_FOUND naming the path, exit 6, no file', async (command) => {
    fx ??= await sqliteFixture('ro');
    const path = join(fx.dir, `${command}-missing.db`);
    const r = await run([command, '-t', 'sqlite', '-o', `registry.sqlite.path=${path}`]);
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
    expect(report.checks.find((c) => c.name === 'configuration')!.detail).toContain('registry.sqlite.readOnly=true (command)');
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
