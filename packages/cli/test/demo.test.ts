import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { fitFrame, hintLines, memberTable, MIN_VIEW, summaryLines, type MemberRow } from '../src/demo/frame.js';
import { rollcallInvocation } from '../src/demo/hint.js';
import { TaskTable } from '../src/demo/task-table.js';
import { alive, BIN, cleanEnv, run, Running } from './cli.js';

const pidsOf = (out: string) => [...out.matchAll(/started (master|worker)-\d pid (\d+)/g)].map((m) => Number(m[2]));
const dbOf = (out: string) => /on sqlite \((\/[^)]+\/demo\.db)\)/.exec(out)?.[1];

/** A table of the demo (plain or in a frame) read back by its header's column starts: one record per row, by header name. */
function readTable(lines: readonly string[]): Record<string, string>[] {
  const at = lines.findIndex((l) => /^ID +(PID +)?STATUS +CPU +MEM +LOAD +BEAT +ITEMS$/.test(l));
  if (at < 0) return [];
  const head = lines[at]!;
  const names = [...head.matchAll(/\S+/g)].map((m) => ({ name: m[0], start: m.index }));
  const rows: Record<string, string>[] = [];
  for (const line of lines.slice(at + 1)) {
    if (!/^(master|worker)-\d /.test(line)) break;
    rows.push(Object.fromEntries(names.map((n, i) => [n.name, line.slice(n.start, names[i + 1]?.start ?? line.length).trim()])));
  }
  return rows;
}

/** Every member table the plain demo printed. */
const tablesOf = (out: string) => [...out.matchAll(/^ID +PID .*\n(?:(?:master|worker)-.*\n)+/gm)].map((m) => readTable(m[0].trimEnd().split('\n')));

/** A fresh TMPDIR for each demo run, so its store (kept for `watch`) is the test's own; short, as /tmp is, so the hint's length is a user's; and PATH as a user's shell has it. */
let tmp: string | undefined;
afterEach(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
});
function ownTmp(): Record<string, string> {
  tmp = mkdtempSync(join(tmpdir(), 'rd-'));
  // A user's shell in a checkout: no node_modules/.bin on PATH (npm's runner put it there for vitest).
  const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.includes(`node_modules${sep}.bin`));
  return { TMPDIR: tmp, PATH: path.join(delimiter) };
}

/** Runs `rollcall demo` in a pseudo-terminal of `columns`×`rows` (script(1)); resolves with its exit code and output. */
function demoInPty(columns: number, rows: number, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const command = `stty cols ${columns} rows ${rows}; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} demo`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`no end within 110 s: ${out.slice(-3000)}`))), 110_000);
    child.on('close', (code) => (clearTimeout(timer), resolve({ code, out: out.replace(/\r\n/g, '\n') })));
  });
}

/** The frames drawn on the alternate screen, each as its lines (control sequences removed), and what came after it. */
function framesOf(out: string): { frames: string[][]; before: string; after: string } {
  const enter = out.indexOf('\x1b[?1049h');
  const leave = out.indexOf('\x1b[?1049l');
  const frames = out
    .slice(enter, leave)
    .split('\x1b[H')
    .slice(1)
    .map((f) => f.replace(/\x1b\[(K|J|\?25h)/g, '').replace(/\n$/, '').split('\n'));
  return { frames, before: out.slice(0, enter), after: out.slice(leave + '\x1b[?1049l'.length) };
}

const COMMAND = 'npx rollcall watch --config /tmp/rollcall-1000/a1b2c3.json';
const row = (id: string, i: number): MemberRow => ({ id, pid: 100_000 + i, status: id.startsWith('master') ? (i === 1 ? 'leader t2' : 'follower') : 'NORMAL', cpu: id.startsWith('master') ? '-' : `0.${i}1`, memory: id.startsWith('master') ? '-' : `0.${i}2`, load: id.startsWith('master') ? '-' : `${i}.03`, beat: `0.${i}s`, items: id.startsWith('master') ? [] : ['t1', 't2', 't3', 't10', 't11', 't12'] });
const ROWS = ['master-1', 'master-2', 'master-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4'].map(row);

describe('the demo view fits its terminal, every promised column whole', () => {
  const parts = (columns: number) => ({
    top: [`rollcall demo: 3 masters, 4 workers on sqlite (/tmp/rollcall-1000/demo.db), cluster demo-abcdef; election lease 3 s, heartbeat 1 s, member lease 3 s`, 'phase: worker-3 crashed (SIGKILL); its peers wait out its 3 s member lease   12.3s', 'leader: master-2   fencing token 2   renewed 0.4s ago'],
    hint: hintLines(COMMAND, columns - 1),
    table: memberTable(ROWS, columns),
    events: Array.from({ length: 20 }, (_, i) => `[  ${i}.0s] event ${i} ${'x'.repeat(250)}`),
  });
  it.each([[80, 24], [MIN_VIEW.columns, MIN_VIEW.rows], [200, 50]])('%i×%i: at most rows - 1 lines of at most columns - 1; the hint runs as printed; each row\'s payload and heartbeat age as given', (columns, rows) => {
    const frame = fitFrame(parts(columns), columns, rows);
    expect(frame.length).toBeLessThanOrEqual(rows - 1);
    for (const line of frame) expect(line.length, line).toBeLessThanOrEqual(columns - 1);
    // The hint as a shell reads it: continuation lines joined, the label left out.
    const hint = frame.join('\n').match(/(?:watch it: |watch it from another terminal:\n)((?:.*\\\n)*.*)/)![1]!.replace(/ \\\n {2}/g, ' ');
    expect(hint).toBe(COMMAND);
    const table = readTable(frame);
    expect(table.map((r) => r.ID)).toEqual(ROWS.map((r) => r.id));
    for (const [i, r] of ROWS.entries()) expect([table[i]!.CPU, table[i]!.MEM, table[i]!.LOAD, table[i]!.BEAT]).toEqual([r.cpu, r.memory, r.load, r.beat]);
    // The items come last: a narrow screen cuts them, the first one stays.
    for (const r of table.filter((x) => x.ID!.startsWith('worker'))) expect(r.ITEMS).toMatch(/^t1 /);
    expect(frame.at(-1)).toContain('event 19'); // the newest event is kept
  });

  it('PID only from 70 columns, so the payload keeps its room at 60', () => {
    expect(memberTable(ROWS, 80)[0]).toMatch(/^ID +PID +STATUS/);
    expect(memberTable(ROWS, 69)[0]).toMatch(/^ID +STATUS +CPU +MEM +LOAD +BEAT +ITEMS$/);
    expect(memberTable(ROWS)[0]).toMatch(/^ID +PID/); // plain output: every column
  });

  it('the hint: one line with its label where it fits, the command on its own line, else split with a shell continuation', () => {
    expect(hintLines(COMMAND, 79)).toEqual([`watch it: ${COMMAND}`]);
    expect(hintLines(COMMAND, 59)).toEqual(['watch it from another terminal:', COMMAND]);
    const split = hintLines(COMMAND, 40);
    expect(split).toEqual(['watch it from another terminal:', 'npx rollcall watch \\', '  --config /tmp/rollcall-1000/a1b2c3.json']);
  });

  it.each([79, 59])('the summary at %i columns: no line wider, no word cut, a number kept with its unit', (width) => {
    const rows: [string, string][] = [
      ['worker crash', 'worker-3 removed by its peers 2.10 s after its SIGKILL: a member lease (3 s) after its last heartbeat, sent up to 1 s before the kill; its items failed over once by master-2 (t7→worker-1 t8→worker-4 t9→worker-1)'],
      ['members now', 'master-2, master-3, worker-1, worker-4'],
    ];
    const lines = summaryLines(rows, width);
    expect(lines[0]).toBe('summary:');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(width);
    const words = (text: string) => text.split(/\s+/).filter(Boolean);
    expect(words(lines.slice(1).join(' '))).toEqual(rows.flatMap(([label, text]) => [...words(label), ...words(text)]));
    expect(lines.join('\n')).not.toMatch(/\d\n +s\b/); // `2.10 s`, `(3 s)`: a number and its unit on one line
  });
});

describe('the hint names the rollcall the user can run', () => {
  const script = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
  it('installed: `rollcall` when the one on PATH is this package', () => {
    tmp = mkdtempSync(join(tmpdir(), 'rollcall-path-'));
    mkdirSync(join(tmp, 'bin'));
    symlinkSync(BIN, join(tmp, 'bin', 'rollcall'));
    expect(rollcallInvocation({ PATH: join(tmp, 'bin') }, tmp, script)).toBe('rollcall');
  });

  it('a checkout (or a project that installed it): `npx rollcall`, from any directory below its node_modules', () => {
    expect(rollcallInvocation({ PATH: '' }, fileURLToPath(new URL('..', import.meta.url)), script)).toBe('npx rollcall');
    expect(rollcallInvocation({ PATH: '' }, fileURLToPath(new URL('../src/demo', import.meta.url)), script)).toBe('npx rollcall');
  });

  it('anywhere else: node and the script, as it was started; a rollcall on PATH that is another one does not count', () => {
    tmp = mkdtempSync(join(tmpdir(), 'rollcall-path-'));
    mkdirSync(join(tmp, 'bin'));
    symlinkSync('/bin/true', join(tmp, 'bin', 'rollcall'));
    expect(rollcallInvocation({ PATH: join(tmp, 'bin') }, tmp, script)).toBe(`node ${script}`);
  });
});

describe('the task table the demo fails items over in', () => {
  const w1 = { id: 'worker-1', incarnation: '11' };
  const w2 = { id: 'worker-2', incarnation: '12' };
  it('moves an item once from its owner; a repeat changes nothing; a smaller fencing token is refused', () => {
    const table = new TaskTable();
    table.assign('t1', w1);
    expect(table.move('t1', w1, w2, 2)).toBe('moved');
    expect(table.move('t1', w1, w2, 2)).toBe('unchanged');
    expect(table.movedTwice()).toEqual(['t1 from worker-1 #11']); // a failover that ran twice is seen
    expect(table.move('t1', w2, w1, 1)).toBe('refused');
    expect(table.ownedBy('12')).toEqual(['t1']);
  });

  it('counts a run of a failed-over incarnation: the violation the demo shows at 0', () => {
    const table = new TaskTable();
    table.assign('t1', w1);
    table.ran(w1, ['t1']);
    expect([table.runs, table.runsAfterFailover]).toEqual([1, 0]);
    table.failoverBegins(w1);
    table.ran(w1, ['t1']);
    expect([table.runs, table.runsAfterFailover]).toEqual([1, 1]);
  });
});

describe('rollcall demo on a terminal, as a person sees it (a pseudo-terminal through script(1))', () => {
  it.each([[80, 24], [60, 16]])('%i×%i: frames on the alternate screen within the screen, the hint whole on each, every worker\'s payload, heartbeat age and items, a summary that fits', async (columns, rows) => {
    const r = await demoInPty(columns, rows, ownTmp());
    expect(r.code, r.out.slice(-3000)).toBe(0);
    const { frames, before, after } = framesOf(r.out);
    // Nothing is drawn outside the alternate screen, and no frame moves the cursor up over the last one (that would land in scrollback).
    expect(before).toBe('');
    expect(r.out.match(/\x1b\[\?1049h/g)).toHaveLength(1);
    expect(r.out).not.toMatch(/\x1b\[\d+F/);
    expect(after).not.toContain('\x1b[');
    expect(frames.length).toBeGreaterThan(10);
    const hint = /^(npx rollcall watch --config \/\S+\/rollcall-\d+\/[0-9a-f]{6}\.json)$/m.exec(after)![1]!;
    for (const frame of frames) {
      expect(frame.length, frame.join('\n')).toBeLessThanOrEqual(rows - 1);
      for (const line of frame) expect(line.length, line).toBeLessThanOrEqual(columns - 1);
      // The hint in every frame, as a shell reads it (a continuation joined); at 80 columns on one line.
      const shown = /(?:watch it: |watch it from another terminal:\n)((?:.*\\\n)*.*)/.exec(frame.join('\n'))?.[1]?.replace(/ \\\n {2}/g, ' ');
      expect(shown, frame.join('\n')).toBe(hint);
      if (columns >= 80) expect(frame, frame.join('\n')).toContain(`watch it: ${hint}`);
    }
    // Steady: all four workers with their payload (numbers), a heartbeat age within the 3 s lease and their three items.
    const steady = frames.filter((f) => f.some((l) => l.startsWith('phase: steady')));
    expect(steady.length, r.out.slice(-3000)).toBeGreaterThan(0);
    const workers = readTable(steady.at(-1)!).filter((w) => w.ID!.startsWith('worker'));
    expect(workers.map((w) => w.ID)).toEqual(['worker-1', 'worker-2', 'worker-3', 'worker-4']);
    for (const [i, w] of workers.entries()) {
      for (const v of [w.CPU, w.MEM, w.LOAD]) expect(v, JSON.stringify(w)).toMatch(/^\d+\.\d\d$/);
      expect(Number(/^(\d+\.\d)s$/.exec(w.BEAT!)?.[1]), JSON.stringify(w)).toBeLessThan(3);
      expect(w.ITEMS).toBe(`t${3 * i + 1} t${3 * i + 2} t${3 * i + 3}`);
    }
    // The end: the withdrawn, crashed and paused workers hold nothing; every item is worker-1's; the leader renewed within its lease.
    const last = frames.at(-1)!;
    const end = Object.fromEntries(readTable(last).map((w) => [w.ID, w]));
    expect(end['worker-1']!.ITEMS).toMatch(/^t1 t2 t3 /);
    for (const id of ['worker-2', 'worker-3', 'worker-4']) expect(end[id]!.ITEMS).toBe('-');
    expect(end['worker-4']!.STATUS).toMatch(/^(NORMAL|BUSY)$/); // a new incarnation, heartbeating
    expect(Number(/renewed (\d+\.\d)s ago/.exec(last.join('\n'))?.[1])).toBeLessThan(3);
    // The summary on the normal screen: no line wider than the screen, what was measured.
    const summary = after.slice(after.indexOf('summary:'), after.indexOf('stopped 7'));
    for (const line of summary.split('\n')) expect(line.length, line).toBeLessThanOrEqual(columns - 1);
    const flat = summary.replace(/\n +/g, ' ');
    expect(flat).toMatch(/worker crash +worker-3 removed by its peers \d+\.\d\d s after its SIGKILL: a member lease \(3 s\) after its last heartbeat, sent up to 1 s before the kill; its items failed over once by master-\d/);
    expect(flat).toMatch(/worker pause +worker-4 removed by its peers \d+\.\d\d s after its SIGSTOP; its items failed over once by master-\d .*found itself lost \(renew-deadline\) and stopped t10 t11 t12\b.* instead of running them/);
    expect(flat).toMatch(/items +12 items; \d+ moves, none asked twice of one incarnation; 0 runs from a failed-over incarnation/);
  });

  it('below 60×16 (50×14): plain lines, no redraw', async () => {
    const r = await demoInPty(50, 14, ownTmp());
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.out).not.toMatch(/\x1b\[(\?1049h|H|J)/);
    expect(r.out).toMatch(/^rollcall demo: 3 masters, 4 workers/m);
    expect(r.out).toMatch(/^\[ *\d+\.\ds\] SIGKILL leader master-\d/m);
  });

  it('TERM=dumb: plain lines, no escape sequence', async () => {
    const r = await demoInPty(120, 50, { ...ownTmp(), TERM: 'dumb' });
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.out).not.toContain('\x1b[');
    expect(r.out).toMatch(/^\[ *\d+\.\ds\] SIGKILL leader master-\d/m);
  });
});

describe('rollcall demo', () => {
  it('without a terminal: the leader killed, a worker withdrawn, one crashed and one paused, each one\'s items failed over once, the paused one stopping; a summary; no process left', async () => {
    const r = await run(['demo'], { timeoutMs: 110_000, env: ownTmp() });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).not.toContain('\x1b[');
    const pids = pidsOf(r.stdout);
    expect(pids).toHaveLength(7);
    const killed = /SIGKILL leader (master-\d) \(pid (\d+)\)/.exec(r.stdout);
    expect(killed, r.stdout).not.toBeNull();
    const failover = /failover: (master-\d) leads with fencing token (\d+), (\d+\.\d+) s after the SIGKILL/.exec(r.stdout);
    expect(failover, r.stdout).not.toBeNull();
    expect(failover![1]).not.toBe(killed![1]);
    const first = /all 7 members present; (master-\d) leads with fencing token (\d+); 12 items on 4 workers/.exec(r.stdout)!;
    expect(first[1]).toBe(killed![1]);
    expect(Number(failover![2])).toBeGreaterThan(Number(first[2]));
    // Nobody may take over before the killed leader's lease (3 s) has run out since its last renewal (every 0.5 s).
    expect(Number(failover![3])).toBeGreaterThanOrEqual(2.45);
    // Each worker's items failed over once, by the new leader, with its fencing token.
    for (const [id, reason] of [['worker-2', 'withdrawn'], ['worker-3', 'expired'], ['worker-4', 'expired']] as const) {
      expect(r.stdout.match(new RegExp(`${failover![1]} fails ${id} #\\d+ over \\(${reason}, token ${failover![2]}\\)`, 'g')), `${id}: ${r.stdout}`).toHaveLength(1);
      expect(r.stdout.match(new RegExp(`${id} #\\d+ failed over: t\\d+→worker-\\d`, 'g')), `${id}: ${r.stdout}`).toHaveLength(1);
    }
    // The paused worker, resumed, finds itself lost and stops instead of running its items, then comes back empty-handed.
    expect(r.stdout).toMatch(/SIGSTOP worker-4 \(pid \d+\): a pause \(it stops itself between two writes, holding no lock on the sqlite file\)\n(.*\n)*.*worker-4 #\d+ failed over: .*\n(.*\n)*.*SIGCONT worker-4: it resumes(.*\n)*.*worker-4 #\d+ is lost \(renew-deadline\): it stops t10 t11 t12\b/);
    expect(r.stdout).toMatch(/worker-4 announced itself again as #\d+, with no items/);
    expect(r.stdout).toMatch(/^ {2}leader crash {2}\d+\.\d\d s from the SIGKILL of master-\d to master-\d leading: a candidate takes over once the leader's record has gone unrenewed for an election lease \(3 s\) by its own clock$/m);
    expect(r.stdout).toMatch(/^ {2}withdraw {6}worker-2 deleted its record on SIGTERM, gone for its peers \d+\.\d\d s later; its items failed over once by master-\d \(t4→worker-\d t5→worker-\d t6→worker-\d\)$/m);
    expect(r.stdout).toMatch(/^ {2}items {9}12 items; \d+ moves, none asked twice of one incarnation; 0 runs from a failed-over incarnation \([1-9]\d* accepted runs in all\)$/m);
    expect(r.stdout).toMatch(/^ {2}members now {3}(master-\d, ){2}worker-1, worker-4$/m);
    expect(r.stdout).toContain(`stopped 7 processes (pids ${pids.join(', ')}); none left`);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    // The store stays for the watch hint, in this user's directory of the demo.
    expect(dbOf(r.stdout)).toBe(join(tmp!, `rollcall-${process.getuid!()}`, 'demo.db'));
    expect(existsSync(dbOf(r.stdout)!)).toBe(true);
  });

  it('BEAT is the age of the last renewal: every live member, masters whose payload never changes included, within its 3 s lease', async () => {
    const r = await run(['demo'], { timeoutMs: 110_000, env: ownTmp() });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const tables = tablesOf(r.stdout);
    expect(tables, r.stdout).toHaveLength(2);
    const live = tables[1]!.filter((m) => m.BEAT !== '-');
    expect(live.map((m) => m.ID).sort(), r.stdout).toEqual(expect.arrayContaining(['worker-1', 'worker-4']));
    expect(live, r.stdout).toHaveLength(4);
    for (const table of tables) for (const m of table) if (m.BEAT !== '-') expect(Number(/^(\d+\.\d)s$/.exec(m.BEAT!)?.[1]), `${m.ID}: ${r.stdout}`).toBeLessThan(3);
    expect(tables[0]!.filter((m) => m.ID!.startsWith('worker')).map((m) => m.ITEMS)).toEqual(['t1 t2 t3', 't4 t5 t6', 't7 t8 t9', 't10 t11 t12']);
  });

  it('the watch hint runs as printed from the checkout, sees the cluster, and outlives the demo until it is stopped', async () => {
    const env = ownTmp();
    const demo = Running.start(['demo'], env);
    const hint = await demo.until('the watch hint', (out) => /^watch it: (npx rollcall watch --config \S+)$/m.exec(out)?.[1], 30_000);
    // As printed: its words (it has no quoting), in a process group of its own, as a shell in another terminal runs it.
    const [command, ...args] = hint.split(' ');
    const watch = new Running(spawn(command!, args, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true }));
    try {
      await watch.until('the watch seeing worker-1', (out) => out.includes('member    added    worker/worker-1'), 60_000);
      const { code } = await demo.exited;
      expect(code, demo.stdout + demo.stderr).toBe(0);
      // The demo's last act (its nodes withdrawing as it stops) reaches the watch, which is still running after it.
      await watch.until('the watch seeing worker-1 withdraw', (out) => /member {4}removed {2}worker\/worker-1 .*\(deleted\)/.test(out), 30_000);
      expect(watch.child.exitCode, watch.stdout + watch.stderr).toBeNull();
      expect(demo.stdout).toContain(`watch it (its store and cluster stay until you delete them):\n${hint}\n`);
    } finally {
      process.kill(-watch.child.pid!, 'SIGINT'); // Ctrl-C: to the whole group, npx and the watch it runs
    }
    const ended = await Promise.race([watch.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the watch did not end on SIGINT: ${watch.stdout}`)), 15_000))]);
    // The watch ends on Ctrl-C (exit 130); npx, which ran it, ends by the same SIGINT.
    expect(ended.code === 130 || ended.signal === 'SIGINT', JSON.stringify(ended)).toBe(true);
  });

  it('Ctrl-C (SIGINT) stops every process it started, exit 130', async () => {
    const demo = Running.start(['demo'], ownTmp());
    const pids = await demo.until('all seven processes started and a leader', (out) => (pidsOf(out).length === 7 && /leader master-\d, fencing token/.test(out) ? pidsOf(out) : undefined), 60_000);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    demo.child.kill('SIGINT');
    const { code } = await Promise.race([demo.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`demo did not exit after SIGINT: ${demo.stdout}`)), 30_000))]);
    expect(code, demo.stdout + demo.stderr).toBe(130);
    expect(demo.stdout).toContain(`interrupted: stopped 7 processes (pids ${pids.join(', ')}); none left`);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it('an unreachable backend fails at once with UNAVAILABLE (exit 4), before starting any process', async () => {
    const r = await run(['demo', '-t', 'mysql', '-o', 'mysql.host=127.0.0.1', '-o', 'mysql.port=1', '-o', 'mysql.user=demo', '-o', 'mysql.database=demo', '-o', 'mysql.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000'], { env: ownTmp() });
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^rollcall: error UNAVAILABLE \[mysql\]: /m);
    // Said once, on stderr: not again among the plain lines.
    expect(r.stdout).not.toContain('UNAVAILABLE');
    expect(pidsOf(r.stdout)).toEqual([]);
  });

  it('refuses the memory store, which cannot be shared between processes, exit 2', async () => {
    const r = await run(['demo', '-t', 'memory']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^rollcall: error USAGE: the memory store lives inside one process/);
  });

  it('refuses an impossible lease, exit 2', async () => {
    const r = await run(['demo', '--lease', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--lease "10": expected milliseconds, 1000 to 60000');
  });
});
