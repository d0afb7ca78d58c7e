import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LockHandle, MemberHandle, Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { lockKey } from '@rollcall/core/spi';
import { waitFor, whenAborted } from '@rollcall/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/errors.js';
import { run, Running, sqliteFixture } from './cli.js';

let fx: Awaited<ReturnType<typeof sqliteFixture>>;
let holder: Registry;
let lock: LockHandle;
let token: number;
let worker1: MemberHandle;
let worker2: MemberHandle;

beforeAll(async () => {
  fx = await sqliteFixture('ops');
  holder = await fx.open('master-a');
  worker1 = await holder.announce({ role: 'worker', id: 'worker-1', payload: { cpu: 0.25, status: 'NORMAL' } });
  worker2 = await holder.announce({ role: 'worker', id: 'worker-2', payload: { cpu: 0.9, status: 'BUSY' } });
  await holder.announce({ role: 'master', id: 'master-a' });
  token = await holder.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
  lock = await holder.lock('nightly', { timeoutMs: 10_000 });
});

afterAll(async () => {
  await fx?.close();
});

describe('help and usage', () => {
  it.each(['members', 'leader', 'locks', 'watch', 'release', 'doctor', 'demo'])('%s --help shows an example and exits 0', async (command) => {
    const r = await run([command, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Examples:\n {2}\$ rollcall /);
    expect(r.stdout).toContain('--config <file>');
    expect(r.stdout.includes('--metrics-port <port>')).toBe(command === 'watch' || command === 'demo');
  });

  it('tasks --help and migrate --help show examples, and tasks shows no configuration flags (it takes none)', async () => {
    const tasks = await run(['tasks', '--help']);
    expect(tasks.code).toBe(0);
    expect(tasks.stdout).toMatch(/Examples:\n {2}\$ rollcall tasks /);
    expect(tasks.stdout).not.toMatch(/--config|-o key=value|REGISTRY_\*/);
    const migrate = await run(['migrate', '--help']);
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toMatch(/Examples:\n {2}\$ rollcall migrate status /);
  });

  it('--help lists every exit code of the table, in order, each with its meaning', async () => {
    const r = await run(['--help']);
    const lines = [...r.stdout.slice(r.stdout.indexOf('Exit codes:')).matchAll(/^ {2}(\d+) +(\S.*)$/gm)];
    const codes = lines.map((m) => Number(m[1]));
    expect(codes).toEqual(Object.values(ExitCode).sort((a, b) => a - b));
    expect(codes).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 130, 143]);
    expect(lines.find((m) => m[1] === '11')![2]).toMatch(/^tasks cancel: /);
  });

  it('--help lists the commands and the exit codes; demo-node stays hidden', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['members', 'leader', 'locks', 'watch', 'release', 'doctor', 'demo']) expect(r.stdout).toContain(`  ${c} `);
    expect(r.stdout).not.toContain('demo-node');
    expect(r.stdout).toContain('Exit codes:');
  });

  it('an unknown command is one USAGE line, exit 2', async () => {
    const r = await run(['memberz']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^rollcall: error USAGE: unknown command 'memberz' \(Did you mean members\?\) \(hint: /);
  });

  it('options before the command are taken as after it (members; migrate status)', async () => {
    const after = await run(['members', ...fx.args, '--json']);
    const before = await run([...fx.args, '--json', 'members']);
    expect(before.code, before.stderr).toBe(0);
    const ids = (out: string) => (JSON.parse(out) as { role: string; id: string }[]).map((m) => `${m.role}/${m.id}`);
    expect(ids(before.stdout)).toEqual(ids(after.stdout));
    expect(ids(before.stdout)).toEqual(expect.arrayContaining(['worker/worker-1', 'worker/worker-2']));
    const migrate = await run(['-t', 'sqlite', 'migrate', 'status']);
    expect(migrate.code).toBe(2); // reached migrate status, which says what it needs
    expect(migrate.stderr).toContain('migrate status needs registry.type=migrate');
  });

  it('-o json is refused with a hint to --output json', async () => {
    const r = await run(['members', ...fx.args, '-o', 'json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--output json');
  });

  it('--version prints the package version', async () => {
    const r = await run(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('0.1.0');
  });
});

describe('members', () => {
  it('lists every role as a table', async () => {
    const r = await run(['members', ...fx.args]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ROLE\s+ID\s+INCARNATION\s+HEARTBEAT\s+UP\s+PAYLOAD$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join('/'))).toEqual(['master/master-a', 'worker/worker-1', 'worker/worker-2']);
    expect(r.stdout).toContain('{"cpu":0.9,"status":"BUSY"}');
  });

  it('one role, as JSON', async () => {
    const r = await run(['members', 'worker', ...fx.args, '--output', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const members = JSON.parse(r.stdout) as { role: string; id: string; payload: unknown; heartbeatAgeMs: number }[];
    expect(members.map((m) => [m.role, m.id, m.payload])).toEqual([
      ['worker', 'worker-1', { cpu: 0.25, status: 'NORMAL' }],
      ['worker', 'worker-2', { cpu: 0.9, status: 'BUSY' }],
    ]);
    expect(members[0]!.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
  });

  it("shows each member's incarnation: the one its handle names, in the table and in JSON", async () => {
    const table = await run(['members', 'worker', ...fx.args]);
    expect(table.code, table.stderr).toBe(0);
    const rows = table.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/).slice(1, 3));
    expect(rows).toEqual([['worker-1', worker1.incarnation], ['worker-2', worker2.incarnation]]);
    const json = await run(['members', 'worker', ...fx.args, '--json']);
    expect((JSON.parse(json.stdout) as { id: string; incarnation: string }[]).map((m) => [m.id, m.incarnation])).toEqual([['worker-1', worker1.incarnation], ['worker-2', worker2.incarnation]]);
    expect(worker1.incarnation).toMatch(/^\d+$/);
    expect(worker1.incarnation).not.toBe(worker2.incarnation);
  });

  it('the same through REGISTRY_* variables', async () => {
    const r = await run(['members', 'worker', '--json'], { env: { REGISTRY_TYPE: 'sqlite', REGISTRY_SQLITE_PATH: fx.path, REGISTRY_CLUSTER: 'ops' } });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { id: string }[]).map((m) => m.id)).toEqual(['worker-1', 'worker-2']);
  });

  it('the same through a --config file, object and flat form; -o overrides the file', async () => {
    const objectForm = join(fx.dir, 'object.json');
    writeFileSync(objectForm, JSON.stringify({ type: 'sqlite', cluster: 'ops', sqlite: { path: fx.path } }));
    const flatForm = join(fx.dir, 'flat.json');
    writeFileSync(flatForm, JSON.stringify({ 'registry.type': 'sqlite', 'registry.cluster': 'elsewhere', 'registry.sqlite.path': fx.path }));
    const a = await run(['members', 'worker', '--config', objectForm, '--json']);
    expect(a.code, a.stderr).toBe(0);
    expect((JSON.parse(a.stdout) as unknown[]).length).toBe(2);
    const b = await run(['members', 'worker', '--config', flatForm, '--json']);
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout)).toEqual([]);
    const c = await run(['members', 'worker', '--config', flatForm, '-o', 'registry.cluster=ops', '--json']);
    expect((JSON.parse(c.stdout) as unknown[]).length).toBe(2);
  });

  it('an empty cluster says so', async () => {
    const r = await run(['members', '-t', 'sqlite', '-o', `sqlite.path=${fx.path}`, '-c', 'empty']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('no members in cluster empty');
  });
});

describe('leader', () => {
  it('one election, with its fencing token', async () => {
    const r = await run(['leader', 'scheduler', ...fx.args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'scheduler', holder: 'master-a', fencingToken: token, leaseDurationSeconds: 3 });
  });

  it('every election as a table', async () => {
    const r = await run(['leader', ...fx.args]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ELECTION\s+LEADER\s+TOKEN/);
    expect(r.stdout).toMatch(new RegExp(`scheduler\\s+master-a\\s+${token}\\s`));
  });

  it('an election that does not exist is NOT_FOUND, exit 6', async () => {
    const r = await run(['leader', 'nobody-runs-this', ...fx.args]);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^rollcall: error NOT_FOUND \[sqlite\]: no election nobody-runs-this in cluster ops \(hint: /);
  });

  it('an invalid name is INVALID_ARGUMENT, exit 2, before connecting', async () => {
    const r = await run(['leader', 'not a name!', '-t', 'sqlite', '-o', 'sqlite.path=/nonexistent-dir/x.db']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^rollcall: error INVALID_ARGUMENT/);
  });
});

describe('locks and release', () => {
  it('lists the lock and its holder', async () => {
    const r = await run(['locks', ...fx.args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { name: string; holder: string; fencingToken: number }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'nightly', fencingToken: lock.fencingToken });
    expect(rows[0]!.holder).toMatch(/^master-a\./);
  });

  it('release without a terminal and without --yes asks, reads "n", and changes nothing (exit 10)', async () => {
    const r = await run(['release', 'nightly', ...fx.args], { input: 'n\n' });
    expect(r.code).toBe(10);
    expect(r.stderr).toContain(`Force-release lock nightly held by master-a.`);
    expect(r.stderr).toMatch(/rollcall: error DECLINED: lock nightly was not released/);
    expect(lock.signal.aborted).toBe(false);
    const after = await run(['locks', ...fx.args, '--json']);
    expect((JSON.parse(after.stdout) as { holder: string }[])[0]!.holder).toMatch(/^master-a\./);
  });

  it('release of a lock that does not exist is NOT_FOUND, exit 6', async () => {
    const r = await run(['release', 'no-such-lock', ...fx.args, '--yes']);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/error NOT_FOUND \[sqlite\]: no lock no-such-lock/);
  });

  it('release answered "y" after the holder renewed frees the lock, logs the broken token, and the holder loses it', async () => {
    const asking = Running.start(['release', 'nightly', ...fx.args], {}, { stdin: true });
    await asking.until('the prompt', (_out, err) => err.includes('[y/N]'));
    // The operator reads the prompt while the holder renews: the version read before it is gone.
    const asked = await registryStore(holder).get(lockKey('nightly'));
    await waitFor(async () => (await registryStore(holder).get(lockKey('nightly')))?.version !== asked?.version, 10_000, 'the holder renewed');
    asking.child.stdin!.end('y\n');
    const exit = await asking.exited;
    const r = { code: exit.code, stderr: asking.stderr, stdout: asking.stdout };
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`rollcall: released lock nightly: broke fencing token ${lock.fencingToken} held by master-a.`);
    // Resolves at once if the loss came during the run.
    await expect(whenAborted(lock.signal, 10_000)).resolves.toMatchObject({ code: 'LEASE_LOST' });
    const after = await run(['locks', ...fx.args, '--json']);
    const row = (JSON.parse(after.stdout) as { holder: string | null; fencingToken: number }[])[0]!;
    expect(row.holder).toBeNull();
    expect(row.fencingToken).toBe(lock.fencingToken);
    // The next holder's token is larger than the one broken.
    const next = await holder.lock('nightly', { timeoutMs: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    const y = await run(['release', 'nightly', ...fx.args, '--yes', '--json']);
    expect(y.code, y.stderr).toBe(0);
    expect(JSON.parse(y.stdout)).toEqual({ lock: 'nightly', released: true, brokeFencingToken: next.fencingToken, previousHolder: expect.stringMatching(/^master-a\./) });
    const again = await run(['release', 'nightly', ...fx.args, '--yes']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already free');
  });

  it('release answered "y" after the lock changed hands breaks nothing: CONFLICT, exit 7, the new holder keeps it', async () => {
    // A cluster of its own: the doctor's record counts below stay those of the fixture's cluster.
    const own = await sqliteFixture('handover');
    const other = await own.open('master-a');
    const first = await other.lock('handover', { timeoutMs: 10_000 });
    const asking = Running.start(['release', 'handover', ...own.args], {}, { stdin: true });
    await asking.until('the prompt', (_out, err) => err.includes(`fencing token ${first.fencingToken}`) && err.includes('[y/N]'));
    await first.release();
    const second = await other.lock('handover', { timeoutMs: 10_000 });
    asking.child.stdin!.end('y\n');
    expect((await asking.exited).code, asking.stderr).toBe(7);
    expect(asking.stderr).toMatch(new RegExp(`error CONFLICT \\[sqlite\\]: lock handover changed hands meanwhile: it is held by master-a\\.\\S+ with fencing token ${second.fencingToken}, not held by master-a\\.\\S+ with fencing token ${first.fencingToken}; nothing was released`));
    expect(second.signal.aborted).toBe(false);
    const after = await run(['locks', ...own.args, '--json']);
    expect((JSON.parse(after.stdout) as { name: string; fencingToken: number; holder: string | null }[]).find((l) => l.name === 'handover')).toMatchObject({ fencingToken: second.fencingToken, holder: expect.stringMatching(/^master-a\./) });
    await own.close();
  });
});

describe('watch', () => {
  it('prints the current state, then each change, as JSON lines; Ctrl-C ends it with 130', async () => {
    const w = Running.start(['watch', ...fx.args, '--json']);
    try {
      await w.until('the watch to start', (_out, err) => err.includes('watching cluster ops'));
      const events = () => w.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(events()).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'member', type: 'added', role: 'worker', id: 'worker-1' }), expect.objectContaining({ kind: 'election', type: 'leader', election: 'scheduler', leader: 'master-a', fencingToken: token })]));
      const other = await fx.open('watch-peer');
      const m = await other.announce({ role: 'worker', id: 'worker-9', payload: { status: 'NORMAL' } });
      await w.until('added', () => events().some((e) => e.type === 'added' && e.id === 'worker-9' && e.incarnation === m.incarnation));
      await m.update({ status: 'BUSY' });
      await w.until('updated', () => events().some((e) => e.type === 'updated' && e.id === 'worker-9' && e.incarnation === m.incarnation && (e.payload as { status: string }).status === 'BUSY'));
      const l = await other.lock('watched', { timeoutMs: 10_000 });
      await w.until('lock acquired', () => events().some((e) => e.kind === 'lock' && e.type === 'acquired' && e.lock === 'watched' && e.fencingToken === l.fencingToken));
      await l.release();
      await w.until('lock released', () => events().some((e) => e.kind === 'lock' && e.type === 'released' && e.lock === 'watched'));
      const c = other.campaign('reports');
      const t = await c.whenElected(AbortSignal.timeout(10_000));
      await w.until('new election', () => events().some((e) => e.kind === 'election' && e.election === 'reports' && e.leader === 'watch-peer' && e.fencingToken === t));
      await m.withdraw();
      await w.until('removed', () => events().some((e) => e.type === 'removed' && e.id === 'worker-9' && e.incarnation === m.incarnation && e.reason === 'deleted'));
      await c.resign();
      await w.until('no leader', () => events().some((e) => e.kind === 'election' && e.election === 'reports' && e.type === 'no-leader'));
    } finally {
      w.child.kill('SIGINT');
    }
    expect((await w.exited).code).toBe(130);
  });
});

describe('watch, stopped by SIGTERM', () => {
  it('closes its registry and exits 143, the signal\'s code, with nothing on stderr after its start line', async () => {
    const w = Running.start(['watch', ...fx.args]);
    await w.until('the watch to start', (_out, err) => err.includes('watching cluster ops'));
    w.child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 143, signal: null });
    expect(w.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('watch, as text', () => {
  it('one line per event, with the time', async () => {
    const w = Running.start(['watch', ...fx.args]);
    try {
      await w.until('the watch to start', (_out, err) => err.includes('watching cluster ops'));
      expect(w.stdout).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} {2}member {4}added {4}worker/worker-1 {2}incarnation ${worker1.incarnation} {2}\\{"cpu":0\\.25,"status":"NORMAL"\\}$`, 'm'));
      expect(w.stdout).toMatch(new RegExp(`^\\S+ {2}election {2}leader {3}scheduler {2}master-a {2}fencing token ${token}$`, 'm'));
    } finally {
      w.child.kill('SIGINT');
    }
    expect((await w.exited).code).toBe(130);
  });
});

describe('doctor and errors', () => {
  it('doctor on sqlite: configuration and connection ok, exit 0', async () => {
    const r = await run(['doctor', ...fx.args]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^OK +configuration +registry\.type=sqlite, cluster ops/m);
    expect(r.stdout).toMatch(/^OK +connection +connected to sqlite in \d+ ms; listed \d+ records \(\d+ members, 2 elections, 2 locks\)/m);
    expect(r.stdout).toContain('doctor: no problem found');
  });

  it('doctor with an unknown key fails the configuration check, exit 8, as JSON too', async () => {
    const r = await run(['doctor', ...fx.args, '-o', 'registry.sqlite.colour=blue', '--json']);
    expect(r.code).toBe(8);
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: { name: string; status: string; code?: string }[] };
    expect(report.ok).toBe(false);
    expect(report.checks[0]).toMatchObject({ name: 'configuration', status: 'fail', code: 'INVALID_CONFIG' });
    expect(report.checks[1]).toMatchObject({ name: 'connection', status: 'skip' });
    // Its hint says where to fix the key, not to run the command that is running.
    const detail = (report.checks[0] as { detail?: string }).detail!;
    expect(detail).toContain('hint: check registry.sqlite.colour in --config, -o or REGISTRY_*');
    expect(detail).not.toContain('rollcall doctor');
  });

  it('an unknown key is INVALID_CONFIG naming it, exit 3', async () => {
    const r = await run(['members', ...fx.args, '-o', 'registry.sqlite.colour=blue']);
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^rollcall: error INVALID_CONFIG \[core\]: registry\.sqlite\.colour: unknown key.*\(hint: check registry\.sqlite\.colour in --config, -o or REGISTRY_\*/);
  });

  it('doctor shows where each key came from, a flag over a variable over the file: the file by its path, the variable by its name', async () => {
    const file = join(fx.dir, 'doctor.json');
    writeFileSync(file, JSON.stringify({ type: 'sqlite', cluster: 'elsewhere', requestTimeoutMs: 3000, sqlite: { path: fx.path } }));
    const r = await run(['doctor', '--config', file, '-c', 'ops'], { env: { REGISTRY_CLUSTER: 'nowhere', REGISTRY_REQUEST_TIMEOUT_MS: '4000' } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^OK +configuration +registry\.type=sqlite, cluster ops/m);
    expect(r.stdout).toContain('registry.cluster=ops (flag)');
    expect(r.stdout).toContain('registry.requestTimeoutMs=4000 (env REGISTRY_REQUEST_TIMEOUT_MS)');
    expect(r.stdout).toContain(`registry.sqlite.path=${fx.path} (file ${file})`);
    expect(r.stdout).toContain('registry.readOnly=true (command)');
    // the schema's defaults are not listed as keys given
    expect(r.stdout).not.toContain('registry.lock.leaseDurationMs');
  });

  it('a mistyped key names the key meant and where the typo was', async () => {
    const r = await run(['members', '-t', 'sqlite', '-o', `sqlite.pth=${fx.path}`]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/registry\.sqlite\.pth: unknown key; did you mean registry\.sqlite\.path\? \(from flag\)/);
    const v = await run(['locks'], { env: { REGISTRY_TYPE: 'sqlite', REGISTRY_SQLITE_PAHT: fx.path } });
    expect(v.stderr).toContain('did you mean REGISTRY_SQLITE_PATH?');
  });

  it('a key or variable with no near miss names the three nearest in its own group, not every known name', async () => {
    const v = await run(['locks'], { env: { REGISTRY_TYPE: 'sqlite', REGISTRY_SQLITE_FILE: fx.path } });
    expect(v.code).toBe(3);
    expect(v.stderr).toMatch(/REGISTRY_SQLITE_FILE: unknown environment variable; the nearest known variables are REGISTRY_SQLITE_PATH, REGISTRY_SQLITE_\w+, REGISTRY_SQLITE_\w+ \(\d+ in all\) \(hint: /);
    expect(v.stderr).not.toContain('REGISTRY_MAX_PAYLOAD_BYTES');
    const k = await run(['locks', '-t', 'sqlite', '-o', `sqlite.file=${fx.path}`]);
    expect(k.code).toBe(3);
    expect(k.stderr).toMatch(/registry\.sqlite\.file: unknown key; the nearest known keys are registry\.sqlite\.path, registry\.sqlite\.\w+, registry\.sqlite\.\w+ \(\d+ in all\) \(from flag\)/);
    expect(k.stderr).not.toContain('registry.maxPayloadBytes');
  });

  it('an unknown REGISTRY_* variable is INVALID_CONFIG, exit 3', async () => {
    const r = await run(['locks'], { env: { REGISTRY_TYPE: 'sqlite', REGISTRY_SQLITE_PAHT: fx.path } });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/error INVALID_CONFIG.*REGISTRY_SQLITE_PAHT: unknown environment variable/);
  });

  it('no type at all is INVALID_CONFIG with the ways to give one', async () => {
    const r = await run(['locks']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/registry\.type: is required; give --type/);
  });

  it('an unknown type names the known ones', async () => {
    const r = await run(['locks', '-t', 'consul']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/error INVALID_CONFIG.*unknown type "consul"; known types are memory, kubernetes, zookeeper, etcd, mysql, postgres, sqlite/);
  });

  it('an unreachable backend is UNAVAILABLE, exit 4, and no password appears anywhere', async () => {
    const secret = 'hunter2-do-not-print';
    const r = await run(['doctor', '-t', 'mysql', '-o', 'mysql.host=127.0.0.1', '-o', 'mysql.port=1', '-o', 'mysql.user=app', '-o', 'mysql.database=app', '-o', `mysql.password=${secret}`, '-o', 'mysql.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000']);
    expect(r.code).toBe(8);
    expect(r.stdout).toMatch(/^FAIL +connection +UNAVAILABLE/m);
    expect(r.stdout).toContain('registry.mysql.password=<secret> (flag)');
    const m = await run(['members', '-t', 'mysql', '-o', 'mysql.host=127.0.0.1', '-o', 'mysql.port=1', '-o', 'mysql.user=app', '-o', 'mysql.database=app', '-o', `mysql.password=${secret}`, '-o', 'mysql.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000']);
    expect(m.code).toBe(4);
    expect(m.stderr).toMatch(/^rollcall: error UNAVAILABLE \[mysql\]: .*\(hint: is the backend running/);
    for (const out of [r.stdout, r.stderr, m.stdout, m.stderr]) expect(out).not.toContain(secret);
  });

  it('doctor on an unreachable PostgreSQL fails the connection check with UNAVAILABLE [postgres], and no password appears', async () => {
    const secret = 'hunter2-do-not-print';
    const r = await run(['doctor', '-t', 'postgres', '-o', 'postgres.host=127.0.0.1', '-o', 'postgres.port=1', '-o', 'postgres.user=app', '-o', 'postgres.database=app', '-o', `postgres.password=${secret}`, '-o', 'postgres.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000']);
    expect(r.code).toBe(8);
    expect(r.stdout).toMatch(/^FAIL +connection +UNAVAILABLE: read the schema version: 127\.0\.0\.1:1 is unreachable/m);
    expect(r.stdout).toContain('registry.postgres.password=<secret> (flag)');
    const m = await run(['members', '-t', 'postgres', '-o', 'postgres.host=127.0.0.1', '-o', 'postgres.port=1', '-o', 'postgres.user=app', '-o', 'postgres.database=app', '-o', `postgres.password=${secret}`, '-o', 'postgres.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000']);
    expect(m.code).toBe(4);
    expect(m.stderr).toMatch(/^rollcall: error UNAVAILABLE \[postgres\]: .*\(hint: is the backend running/);
    for (const out of [r.stdout, r.stderr, m.stdout, m.stderr]) expect(out).not.toContain(secret);
  });
});

describe('secrets inside malformed input never leave', () => {
  // Each source a password can arrive by, malformed right at the password: every command's output, doctor's included.
  const secret = 'hunter2-do-not-print';
  const commands = (args: string[], env: Record<string, string> = {}) => Promise.all([run(['doctor', ...args], { env }), run(['members', ...args], { env })]);
  const noSecret = (results: { stdout: string; stderr: string }[]) => {
    for (const r of results) for (const out of [r.stdout, r.stderr]) expect(out).not.toContain('hunter2');
  };

  it('a --config file that is not JSON: line, column and reason, and none of its text', async () => {
    const path = join(fx.dir, 'broken.json');
    writeFileSync(path, `{\n  "type": "postgres",\n  "postgres": { "user": "app", "password": ${secret} }\n}\n`);
    const [doctor, members] = await commands(['--config', path]);
    expect(doctor.code).toBe(8);
    expect(doctor.stdout).toContain(`${path}: the configuration file is not valid JSON: expected a value (an object, array, string, number, true, false or null) at line 3, column 44 (its text is not shown: it may hold secrets)`);
    expect(members.code).toBe(3);
    noSecret([doctor, members]);
  });

  it('a kubeconfig that is not YAML: line, column and reason, and none of its lines', async () => {
    const path = join(fx.dir, 'broken-kubeconfig');
    writeFileSync(path, `apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: c\nusers:\n- name: u\n  user:\n    password: ${secret}\n     token: ${secret}\ncurrent-context: x\n`);
    const [doctor, members] = await commands(['-t', 'kubernetes', '-o', `kubernetes.kubeconfig=${path}`]);
    expect(doctor.code).toBe(8);
    expect(doctor.stdout).toMatch(/^FAIL +connection +INVALID_CONFIG: registry\.kubernetes\.kubeconfig: cannot load \S+: not valid YAML: bad indentation of a mapping entry at line 10, column 11 \(its text is not shown: it may hold secrets\)/m);
    expect(members.code).toBe(3);
    noSecret([doctor, members]);
  });

  it('an etcd endpoint with credentials that is not a URL, by flag and by REGISTRY_* variable: the credentials are not shown', async () => {
    const endpoint = `http://root:${secret}@[not-a-host`;
    const byFlag = await commands(['-t', 'etcd', '-o', `etcd.endpoints=${endpoint}`]);
    const byEnv = await commands(['-t', 'etcd'], { REGISTRY_ETCD_ENDPOINTS: endpoint });
    for (const [doctor, members] of [byFlag, byEnv]) {
      expect(doctor!.code).toBe(8);
      expect(doctor!.stdout).toContain('registry.etcd.endpoints: "http://<credentials>@[not-a-host" is not a URL');
      expect(members!.code).toBe(3);
    }
    noSecret([...byFlag, ...byEnv]);
  });

  it('a PostgreSQL url with a password that is not a URL: the url is not shown', async () => {
    const [doctor, members] = await commands(['-t', 'postgres', '-o', `postgres.url=postgres://app:${secret}@[db/orders`]);
    expect(doctor.code).toBe(8);
    expect(doctor.stdout).toMatch(/registry\.postgres\.url: is not a URL: expected postgres:\/\/user:password@host:port\/database/);
    expect(members.code).toBe(3);
    noSecret([doctor, members]);
  });
});

describe('text from records is shown, never obeyed by the terminal', () => {
  // A window-title escape, a screen clear, a C1 CSI and a right-to-left override, as a foreign writer could put them.
  const hostile = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eevil';
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

  it('members, locks, release and watch print escapes for control characters and bidi overrides, in tables, text and JSON', async () => {
    const own = await sqliteFixture('hostile');
    try {
      const registry = await own.open('master-a');
      await registry.announce({ role: 'worker', id: 'w1', payload: { note: hostile } });
      const store = registryStore(registry);
      const now = new Date().toISOString().replace('Z', '000Z');
      await store.create(lockKey('evil'), { holderIdentity: hostile, leaseDurationSeconds: 3600, acquireTime: now, renewTime: now, leaseTransitions: 1 });
      const outputs = [
        await run(['members', ...own.args]),
        await run(['members', ...own.args, '--json']),
        await run(['locks', ...own.args]),
        await run(['locks', ...own.args, '--json']),
      ];
      const watching = Running.start(['watch', ...own.args]);
      await watching.until('the member line', (out) => out.includes('w1'));
      watching.child.kill('SIGINT');
      await watching.exited;
      const release = await run(['release', 'evil', ...own.args, '--yes']);
      expect(release.code, release.stderr).toBe(0);
      for (const r of [...outputs, { stdout: watching.stdout, stderr: watching.stderr, code: 0 }, release]) {
        expect(r.stdout + r.stderr).not.toMatch(raw);
      }
      expect(outputs[2]!.stdout).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil');
      expect(JSON.parse(outputs[3]!.stdout)[0].holder).toBe(hostile); // JSON escapes, and still says what was there
      expect(JSON.parse(outputs[1]!.stdout)[0].payload).toEqual({ note: hostile });
      expect(release.stderr).toContain('held by \\x1b]0;pwned\\x07');
    } finally {
      await own.close();
    }
  });
});
