import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fitFrame, MIN_VIEW } from '../src/demo/demo.js';
import { alive, BIN, cleanEnv, run, Running } from './cli.js';

const pidsOf = (out: string) => [...out.matchAll(/started (master|worker)-\d pid (\d+)/g)].map((m) => Number(m[2]));
const dbOf = (out: string) => /on sqlite \((\/[^)]+\/demo\.db)\)/.exec(out)?.[1];
/** The HEARTBEAT column of each member table the plain demo printed: id → age in seconds (undefined for '-'). */
const heartbeatsOf = (out: string) =>
  [...out.matchAll(/^ROLE +ID +PID +STATUS +CPU +MEMORY +LOAD +HEARTBEAT\n((?:(?:master|worker) .*\n)+)/gm)].map((table) =>
    Object.fromEntries(
      table[1]!.trimEnd().split('\n').map((row) => {
        const cells = row.split(/ +/);
        const age = /^(\d+(?:\.\d+)?)s$/.exec(cells.at(-1)!);
        return [cells[1]!, cells.at(-1) === '-' ? undefined : age ? Number(age[1]) : Infinity];
      }),
    ),
  );

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

/** The frames the view drew: what follows each clear-below, up to the next redraw or the end of the view. */
function framesOf(out: string): string[][] {
  const view = out.slice(out.indexOf('\x1b[?25l'), out.indexOf('\x1b[?25h'));
  return view.split(/\x1b\[(?:\d+F)?\x1b\[J/).slice(1).map((f) => f.replace(/\n$/, '').split('\n'));
}

describe('the demo view fits its terminal', () => {
  const parts = {
    top: [`rollcall demo: 3 masters and 4 workers on sqlite (/tmp/rollcall-demo-Ab12Cd/demo.db), cluster demo-abcdef; election lease 3 s, member heartbeat 1 s, member lease 3 s`, 'phase: failover: master-1 was killed (SIGKILL); the others wait out its 3 s lease   12.3s', 'leader: master-2   fencing token 2   renewed 0.4s ago'],
    table: ['ROLE    ID        PID     STATUS                     CPU   MEMORY  LOAD  HEARTBEAT', ...Array.from({ length: 7 }, (_, i) => `worker  worker-${i}  100${i}    NORMAL (leader, token 2)   0.20  0.40    1.20  0.3s`)],
    events: Array.from({ length: 9 }, (_, i) => `[  ${i}.0s] event ${i} ${'x'.repeat(250)}`),
  };
  it.each([[80, 24], [MIN_VIEW.columns, MIN_VIEW.rows], [200, 50]])('%i×%i: at most rows - 1 lines of at most columns - 1, the table whole, cuts marked with an ellipsis', (columns, rows) => {
    const frame = fitFrame(parts, columns, rows);
    expect(frame.length).toBeLessThanOrEqual(rows - 1);
    for (const line of frame) expect(line.length).toBeLessThanOrEqual(columns - 1);
    expect(frame.filter((l) => /^(ROLE|worker) /.test(l))).toHaveLength(8);
    expect(frame.some((l) => l.endsWith('…'))).toBe(true);
    expect(frame.at(-1)).toContain('event 8'); // the newest event is kept
  });

  it.each([[80, 24], [200, 50]])('a real run at %i×%i: no frame is taller or wider than the screen, and it says how to watch it', async (columns, rows) => {
    const r = await demoInPty(columns, rows);
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.out).toMatch(/^watch it from another terminal: rollcall watch -t sqlite -c demo-[0-9a-f]{6} -o sqlite\.path=\/\S+\/demo\.db$/m);
    const frames = framesOf(r.out);
    expect(frames.length).toBeGreaterThan(10);
    for (const frame of frames) {
      expect(frame.length, frame.join('\n')).toBeLessThanOrEqual(rows - 1);
      for (const line of frame) expect(line.length, line).toBeLessThanOrEqual(columns - 1);
    }
  });

  it('below 60×16 (50×14): plain lines, no redraw', async () => {
    const r = await demoInPty(50, 14);
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.out).not.toMatch(/\x1b\[(\d+F|J)/);
    expect(r.out).toMatch(/^rollcall demo: 3 masters and 4 workers/m);
    expect(r.out).toMatch(/^\[ *\d+\.\ds\] SIGKILL leader master-\d/m);
  });

  it('TERM=dumb: plain lines, no cursor movement', async () => {
    const r = await demoInPty(120, 50, { TERM: 'dumb' });
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.out).not.toContain('\x1b[');
    expect(r.out).toMatch(/^\[ *\d+\.\ds\] SIGKILL leader master-\d/m);
  });
});

describe('rollcall demo', () => {
  it('without a terminal: plain lines through the SIGKILL failover, a withdraw and a crash, a summary, and no process left', async () => {
    const r = await run(['demo'], { timeoutMs: 110_000 });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // No escape sequences without a terminal.
    expect(r.stdout).not.toContain('\x1b[');
    const pids = pidsOf(r.stdout);
    expect(pids).toHaveLength(7);
    const killed = /SIGKILL leader (master-\d) \(pid (\d+)\)/.exec(r.stdout);
    expect(killed, r.stdout).not.toBeNull();
    const failover = /failover: (master-\d) leads with fencing token (\d+), (\d+\.\d+) s after the SIGKILL/.exec(r.stdout);
    expect(failover, r.stdout).not.toBeNull();
    expect(failover![1]).not.toBe(killed![1]);
    const first = /all 7 members present; (master-\d) leads with fencing token (\d+)/.exec(r.stdout)!;
    expect(first[1]).toBe(killed![1]);
    expect(Number(failover![2])).toBeGreaterThan(Number(first[2]));
    // Nobody may take over before the killed leader's lease (3 s) has run out since its last renewal (every 0.5 s).
    expect(Number(failover![3])).toBeGreaterThanOrEqual(2.45);
    expect(r.stdout).toMatch(/SIGTERM worker-2 \(pid \d+\): it withdraws\n.*worker-2 left/);
    expect(r.stdout).toMatch(/SIGKILL worker-3 \(pid \d+\): a crash/);
    expect(r.stdout).toMatch(/^ {2}failover {11}\d+\.\d\d s from the SIGKILL of master-\d to master-\d leading \(election lease 3 s\)$/m);
    expect(r.stdout).toMatch(/^ {2}graceful withdraw {2}worker-2 gone \d+\.\d\d s after SIGTERM/m);
    expect(r.stdout).toMatch(/^ {2}crash {14}worker-3 gone \d+\.\d\d s after SIGKILL/m);
    expect(r.stdout).toMatch(/^ {2}members now {8}(master-\d, ){2}worker-1, worker-4$/m);
    expect(r.stdout).toContain(`stopped 7 processes (pids ${pids.join(', ')}); none left`);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    expect(existsSync(dbOf(r.stdout)!)).toBe(false);
  });

  it('HEARTBEAT is the age of the last renewal: every live member, masters whose payload never changes included, within its 3 s lease', async () => {
    const r = await run(['demo'], { timeoutMs: 110_000 });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const tables = heartbeatsOf(r.stdout);
    expect(tables, r.stdout).toHaveLength(2);
    // The last table comes seconds after the failover: the surviving follower master last changed its payload when it announced.
    const last = tables[1]!;
    const live = Object.entries(last).filter(([, age]) => age !== undefined);
    expect(live.map(([id]) => id).sort(), r.stdout).toEqual(expect.arrayContaining(['worker-1', 'worker-4']));
    expect(live, r.stdout).toHaveLength(4);
    for (const table of tables) for (const [id, age] of Object.entries(table)) if (age !== undefined) expect(age, `${id}: ${r.stdout}`).toBeLessThan(3);
  });

  it('on a terminal: the view redraws in place, then the plain summary (a pseudo-terminal through script(1))', async () => {
    // script(1) (util-linux, essential on Debian) gives the demo a real pty, as a user's terminal would.
    const command = `stty cols 120 rows 50; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} demo`;
    const r = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`no end within 110 s: ${out.slice(-3000)}`))), 110_000);
      child.on('close', (code) => (clearTimeout(timer), resolve({ code, out })));
    });
    expect(r.code, r.out.slice(-3000)).toBe(0);
    const out = r.out.replace(/\r\n/g, '\n');
    expect(out).toContain('\x1b[?25l');
    // Each frame after the first moves up over the previous one and clears below it.
    const redraws = out.match(/\x1b\[\d+F\x1b\[J/g) ?? [];
    expect(redraws.length).toBeGreaterThan(10);
    expect(out).toMatch(/phase: failover: master-\d was killed \(SIGKILL\)/);
    expect(out).toMatch(/leader: master-\d +fencing token 2/);
    // The last frame, after the crash: the leader line shows its last renewal (every 0.5 s), not its election seconds ago.
    const renewed = [...out.matchAll(/fencing token 2 +renewed (\d+\.\d)s ago/g)].map((m) => Number(m[1]));
    expect(renewed.at(-1), out.slice(-3000)).toBeLessThan(3);
    expect(out).toMatch(/\x1b\[\?25hsummary:\n/);
    expect(out).toMatch(/^ {2}failover {11}\d+\.\d\d s from the SIGKILL/m);
    const pids = [...out.matchAll(/started (?:master|worker)-\d pid (\d+)/g)].map((m) => Number(m[1]));
    expect(new Set(pids).size).toBe(7);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it('Ctrl-C (SIGINT) stops every process it started and removes its files, exit 130', async () => {
    const demo = Running.start(['demo']);
    const pids = await demo.until('all seven processes started and a leader', (out) => (pidsOf(out).length === 7 && /leader master-\d, fencing token/.test(out) ? pidsOf(out) : undefined), 60_000);
    const db = dbOf(demo.stdout)!;
    expect(existsSync(db)).toBe(true);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    demo.child.kill('SIGINT');
    const { code } = await Promise.race([demo.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`demo did not exit after SIGINT: ${demo.stdout}`)), 30_000))]);
    expect(code, demo.stdout + demo.stderr).toBe(130);
    expect(demo.stdout).toContain(`interrupted: stopped 7 processes (pids ${pids.join(', ')}); none left`);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    expect(existsSync(db)).toBe(false);
  });

  it('an unreachable backend fails at once with UNAVAILABLE (exit 4), before starting any process', async () => {
    const r = await run(['demo', '-t', 'mysql', '-o', 'mysql.host=127.0.0.1', '-o', 'mysql.port=1', '-o', 'mysql.user=demo', '-o', 'mysql.database=demo', '-o', 'mysql.connectTimeoutMs=500', '-o', 'requestTimeoutMs=1000']);
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
