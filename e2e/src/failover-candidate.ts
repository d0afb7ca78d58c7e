/**
 * A process of the failover chaos (failover-chaos.ts): a **worker** announces
 * itself under the workers' role and, while its member handle reads `alive`,
 * writes progress on its item to the incarnation-checking resource under its
 * member incarnation (re-announced as a new one after each loss); a **leader**
 * campaigns and runs `registry.failover()` on the workers' role, whose handler
 * fences the dead incarnation at the resource under its fencing token. Every
 * process watches the role. It reports everything, and takes commands, on the
 * child-process harness's JSON lines (see failover-protocol.ts), stamped with
 * CLOCK_MONOTONIC; the coordinator kills, stops and cuts it off.
 */
import { serveParent } from '@rollcall/child-harness';
import { createRegistry, ErrorCode, hasCode, RegistryError, type Logger, type MemberHandle, type Registry } from '@rollcall/core';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { postJson } from './fenced-resource.js';
import { CHAOS_SPEC_VARIABLE, type ChaosCommand, type ChaosEvent, type ChaosSpec, type FenceRequest, type WorkRequest } from './failover-protocol.js';

type Report = ChaosEvent extends infer E ? (E extends unknown ? Omit<E, 't' | 'n'> & { t?: number } : never) : never;

const spec = JSON.parse(process.env[CHAOS_SPEC_VARIABLE] ?? 'null') as ChaosSpec | null;
if (!spec) {
  console.error(`failover-candidate: ${CHAOS_SPEC_VARIABLE} is not set; the failover chaos coordinator starts these processes`);
  process.exit(2);
}

/** Incarnations whose handler holds until its term ends (`hold` commands). */
const holds = new Set<string>();
let up: () => void = () => {};
const started = new Promise<void>((resolve) => (up = resolve));
const parent = serveParent<unknown, ChaosCommand, ChaosEvent>({
  transport: 'lines',
  onCommand: (command) => started.then(() => run(command)).catch((err: unknown) => void reportError(command.op, err)),
});

let sequence = 0;
/** Writes one event line; synchronous on a pipe, so a SIGKILL right after loses nothing. */
function report(event: Report): void {
  parent.report({ ...event, t: event.t ?? monotonicMs(), n: ++sequence } as ChaosEvent);
}
const describe = (err: unknown) => ({ code: err instanceof RegistryError ? err.code : undefined, message: String((err as Error)?.message ?? err) });
const reportError = (where: string, err: unknown) => report({ type: 'error', where, ...describe(err) });
function fatal(err: unknown): never {
  report({ type: 'fatal', message: String((err as Error)?.stack ?? err) });
  process.exit(1);
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

const log = (level: string) => (fields: unknown, message?: string) => process.stderr.write(`${JSON.stringify({ t: monotonicMs(), level, ...(typeof fields === 'string' ? { msg: fields } : { ...(fields as object), msg: message }) }, (_k, v: unknown) => (v instanceof Error ? v.message : v))}\n`);
const logger: Logger = { debug: () => {}, info: () => {}, warn: log('warn'), error: log('error') };

const STARTUP_BOUND_MS = 60_000;
/** Runs a startup step, retrying while the backend is unreachable (restarting, or a loaded machine), as a service would. */
async function whileUnavailable<T>(where: string, step: () => Promise<T>): Promise<T> {
  const giveUpAt = monotonicMs() + STARTUP_BOUND_MS;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!hasCode(err, ErrorCode.UNAVAILABLE) || monotonicMs() > giveUpAt) throw err;
      reportError(where, err);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

const registry: Registry = await whileUnavailable('open', () => createRegistry(spec.registry, { logger })).catch(fatal);
for (const state of ['suspended', 'lost', 'reconnected'] as const) registry.on(state, () => report({ type: 'connection', state }));
registry.watchMembers(spec.role, (e) => {
  if (e.type === 'added') report({ type: 'memberAdded', id: e.member.id, incarnation: e.member.incarnation });
  else if (e.type === 'removed') report({ type: 'memberRemoved', id: e.member.id, incarnation: e.member.incarnation, reason: e.reason });
});

let lastTick = monotonicMs();
/** Reports a gap in the sampling; returns the sample's stamp, taken before any read. */
function tick(): number {
  const t = monotonicMs();
  if (t - lastTick > spec!.stallThresholdMs) report({ type: 'stall', from: lastTick, t });
  lastTick = t;
  return t;
}

let ticker: NodeJS.Timeout;
if (spec.part === 'worker') {
  const member: MemberHandle = await whileUnavailable('announce', () => registry.announce({ role: spec!.role, id: spec!.name, payload: { item: `${spec!.name}/item` } })).catch(fatal);
  report({ type: 'announced', incarnation: member.incarnation! });
  member.on('lost', (e) => report({ type: 'memberLost', incarnation: e.incarnation, reason: e.reason }));
  member.on('reannounced', (e) => report({ type: 'reannounced', incarnation: e.incarnation, previous: e.previous }));
  // The belief as the application reads it, and a write while it says alive: each stamped before the read.
  let belief: { alive: boolean; incarnation: string | undefined; at: number } = { alive: false, incarnation: undefined, at: 0 };
  let writing = false;
  let lastWrite = -Infinity;
  ticker = setInterval(() => {
    const t = tick();
    const alive = member.alive;
    const incarnation = member.incarnation;
    if (alive !== belief.alive || incarnation !== belief.incarnation) report({ type: 'alive', alive, incarnation, t, ...(belief.alive ? { lastAlive: belief.at } : {}) });
    belief = { alive, incarnation, at: t };
    if (!alive || incarnation === undefined || writing || t - lastWrite < spec!.writeIntervalMs) return;
    writing = true;
    lastWrite = t;
    const request: WorkRequest = { writer: spec!.name, incarnation, item: `${spec!.name}/item`, readAt: t };
    void postJson(spec.resourceUrl, '/work', request, 2000).then((outcome) => {
      writing = false;
      report({ type: 'work', incarnation, outcome, t });
    });
  }, spec.tickMs);
} else {
  const leadership = registry.campaign(spec.election);
  registry.on('elected', (e) => {
    const t = monotonicMs();
    report({ type: 'elected', token: e.fencingToken, valid: leadership.isLeader && leadership.fencingToken === e.fencingToken, t });
  });
  registry.on('leadershipLost', (e) => report({ type: 'lost', token: e.fencingToken, reason: e.reason }));
  const failover = registry.failover(spec.role, leadership, async (dead, run) => {
    const t = monotonicMs();
    report({ type: 'failoverStarted', id: dead.id, incarnation: dead.incarnation, token: run.fencingToken, resumed: run.resumed, attempt: run.attempt, reason: dead.reason, t });
    // Fence first: from here the dead incarnation's writes are refused, and a deposed leader's fence is.
    const fence: FenceRequest = { id: dead.id, incarnation: dead.incarnation, token: run.fencingToken, leader: spec!.name, readAt: t };
    const outcome = await postJson(spec!.resourceUrl, '/fence', fence, 2000);
    report({ type: 'fenced', incarnation: dead.incarnation, token: run.fencingToken, outcome });
    if (outcome !== 'accepted') throw new Error(`the resource ${outcome === 'failed' ? 'did not answer' : 'refused the fence'}`);
    if (holds.has(dead.incarnation)) {
      report({ type: 'held', incarnation: dead.incarnation, token: run.fencingToken });
      await new Promise<void>((_resolve, reject) => {
        if (run.signal.aborted) reject(run.signal.reason);
        run.signal.addEventListener('abort', () => reject(run.signal.reason), { once: true });
      });
    }
    if (run.signal.aborted) throw run.signal.reason;
  });
  const fields = (d: { id: string; incarnation: string; fencingToken: number }) => ({ id: d.id, incarnation: d.incarnation, token: d.fencingToken });
  failover.on('acknowledged', (d) => report({ type: 'acknowledged', ...fields(d) }));
  failover.on('skipped', (d) => report({ type: 'skipped', ...fields(d) }));
  failover.on('failed', (d) => report({ type: 'failoverFailed', ...fields(d), attempt: d.attempt, message: describe(d.error).message }));
  ticker = setInterval(tick, spec.tickMs);
}
report({ type: 'ready' });

async function run(command: ChaosCommand): Promise<void> {
  switch (command.op) {
    case 'hold':
      holds.add(command.incarnation);
      return;
    case 'shutdown':
      clearInterval(ticker);
      await registry.close();
      process.exit(0);
  }
}

up();
