/**
 * A soak candidate: one real process with one registry that campaigns in the
 * election, contends for the lock, announces itself as a member (updating its
 * payload now and then) and watches the members. While it leads or holds the
 * lock it writes to the fenced resource, each write carrying the fencing token
 * read at that moment. It reports everything, and takes commands, through the
 * child-process harness's JSON lines on stdout and stdin (see protocol.ts). It
 * is killed, stopped and cut off by the coordinator.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { serveParent } from '@rollcall/child-harness';
import { createRegistry, ErrorCode, hasCode, RegistryError, type Failover, type Leadership, type LockHandle, type Logger, type MemberHandle, type Registry } from '@rollcall/core';
import { writeFenced } from './fenced-resource.js';
import { CHANNEL_VARIABLE, SPEC_VARIABLE, type CandidateInit, type CandidateCommand, type CandidateEvent, type CandidateSpec, type Fenced } from './protocol.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';

type Report = CandidateEvent extends infer E ? (E extends unknown ? Omit<E, 't' | 'n'> & { t?: number } : never) : never;

const spec = JSON.parse(process.env[SPEC_VARIABLE] ?? 'null') as CandidateSpec | null;
if (!spec) {
  console.error(`candidate: ${SPEC_VARIABLE} is not set; the soak coordinator starts candidates`);
  process.exit(2);
}

// In a pod the coordinator is not the parent: the candidate connects back over the unix
// socket CHANNEL_VARIABLE names (its directory is mounted into the pod), and learns from
// the init which incarnation it is (the kubelet restarts it with the same environment).
const channelPath = process.env[CHANNEL_VARIABLE];
const socket = channelPath
  ? await new Promise<Socket>((resolve) => {
      const s = createConnection(channelPath, () => resolve(s));
      // Nobody to tell: exit non-zero, and the kubelet starts it again.
      s.once('error', (err) => (console.error(`candidate: cannot reach the coordinator at ${channelPath}: ${err.message}`), process.exit(2)));
    })
  : undefined;
let initialised: (init: CandidateInit) => void = () => {};
const init = new Promise<CandidateInit>((resolve) => (initialised = resolve));

// Commands wait until the candidate is up (in arrival order), then run; the coordinator going away (stdin or the socket ends) ends the candidate.
let up: () => void = () => {};
const started = new Promise<void>((resolve) => (up = resolve));
const parent = serveParent<CandidateInit, CandidateCommand, CandidateEvent>({
  transport: 'lines',
  streams: socket && { input: socket, output: socket },
  onInit: (given) => initialised(given),
  onCommand: (command) => started.then(() => run(command)).catch((err: unknown) => void reportError(command.op, err)),
});
if (socket) spec.incarnation = (await init).incarnation;

let sequence = 0;
/** Writes one event line; synchronous on a pipe, so a SIGKILL right after loses nothing. */
function report(event: Report): number {
  parent.report({ ...event, t: event.t ?? monotonicMs(), n: ++sequence } as CandidateEvent);
  return sequence;
}

const describe = (err: unknown) => ({ code: err instanceof RegistryError ? err.code : undefined, message: String((err as Error)?.message ?? err) });
const reportError = (where: string, err: unknown) => report({ type: 'error', where, ...describe(err) });

function fatal(err: unknown): never {
  report({ type: 'fatal', message: String((err as Error)?.stack ?? err) });
  process.exit(1);
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

/** Warnings and errors of the registry go to stderr (the coordinator keeps them per incarnation). */
const log = (level: string) => (fields: unknown, message?: string) => process.stderr.write(`${JSON.stringify({ t: monotonicMs(), level, ...(typeof fields === 'string' ? { msg: fields } : { ...(fields as object), msg: message }) }, (_k, v: unknown) => (v instanceof Error ? v.message : v))}\n`);
const logger: Logger = { debug: () => {}, info: () => {}, warn: log('warn'), error: log('error') };

const STARTUP_BOUND_MS = 60_000;

/**
 * Runs a startup step, retrying while the backend is unreachable or slow
 * (restarting, or a loaded machine), as a service would; `alsoRetry` names
 * refusals that are as passing (an announce racing the heartbeat of the
 * incarnation it replaces: CONFLICT).
 */
async function whileUnavailable<T>(where: string, step: () => Promise<T>, alsoRetry: ErrorCode[] = []): Promise<T> {
  const giveUpAt = monotonicMs() + STARTUP_BOUND_MS;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!hasCode(err, ErrorCode.UNAVAILABLE, ...alsoRetry) || monotonicMs() > giveUpAt) throw err;
      reportError(where, err);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

// In a pod: the local end of the way to the coordinator's proxy (see CandidateSpec.relay).
if (spec.relay) {
  const { port, socketPath } = spec.relay;
  const relay = createServer((client) => {
    const upstream = createConnection(socketPath);
    const drop = () => (client.destroy(), upstream.destroy());
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => relay.once('error', reject).listen(port, '127.0.0.1', resolve)).catch(fatal);
}

const open = (): Promise<Registry> => whileUnavailable('open', () => createRegistry(spec!.registry, { logger }));

const registry = await open().catch(fatal);
const closing = new AbortController();
let leadership: Leadership = registry.campaign(spec.election);
let lock: LockHandle | undefined;

/** With spec.failover: fails the role's dead incarnations over while `over` leads, reporting each; the handler has no effect of its own to wait for. */
function failOver(over: Leadership): Failover | undefined {
  if (!spec!.failover) return undefined;
  const failover = registry.failover(spec!.role, over, async (dead, run) => {
    report({ type: 'failoverStarted', id: dead.id, incarnation: dead.incarnation, reason: dead.reason, lastPayload: dead.lastPayload, resumed: run.resumed, token: run.fencingToken });
  });
  failover.on('acknowledged', (d) => report({ type: 'failoverAcknowledged', id: d.id, incarnation: d.incarnation, token: d.fencingToken }));
  return failover;
}
let failover = failOver(leadership);

registry.on('elected', (e) => {
  // Stamped before the validity read the announcement rests on: a pause between them shows as invalid, not as a term.
  const t = monotonicMs();
  report({ type: 'elected', token: e.fencingToken, valid: leadership.isLeader && leadership.fencingToken === e.fencingToken, t });
});
registry.on('leadershipLost', (e) => report({ type: 'lost', token: e.fencingToken, reason: e.reason }));
// The lock's announcement is lock() resolving with its handle (read below); the event's instant is its stamp.
let lockAnnouncedAt: number | undefined;
registry.on('lockAcquired', () => (lockAnnouncedAt = monotonicMs()));
registry.on('lockLost', (e) => report({ type: 'lockLost', token: e.fencingToken, reason: e.reason }));
for (const state of ['suspended', 'lost', 'reconnected'] as const) registry.on(state, () => report({ type: 'connection', state }));

registry.watchMembers(spec.role, (e) => {
  const { id, payload, incarnation } = e.member;
  if (e.type === 'added') report({ type: 'memberAdded', id, payload, incarnation });
  else if (e.type === 'updated') report({ type: 'memberUpdated', id, payload, incarnation });
  else report({ type: 'memberRemoved', id, payload, reason: e.reason, incarnation });
});
let seq = 0;
const nextPayload = () => ({ incarnation: spec.incarnation, seq: seq++ });
// Taken over from an earlier incarnation (same ids), which may still heartbeat them: peers see them updated, never removed.
// ALREADY_EXISTS: a predecessor of the release before incarnations writes its record back each time this one removes it
// (it re-creates a vanished record), until it is stopped; each refusal is reported as an error event.
const announce = (id: string, payload: unknown) => whileUnavailable('announce', () => registry.announce({ role: spec!.role, id, payload: payload as never }), [ErrorCode.CONFLICT, ErrorCode.ALREADY_EXISTS]);
let member: MemberHandle = await announce(spec.name, nextPayload()).catch(fatal);
await Promise.all((spec.extraMembers ?? []).map((id) => announce(id, { incarnation: spec!.incarnation }))).catch(fatal);
// In a pod with registry.member.liveness=pod, the kubelet's probe of this endpoint is the member's liveness.
if (spec.probePort !== undefined) {
  const { serveReadinessProbe } = await import('@rollcall/kubernetes');
  await serveReadinessProbe(registry, { port: spec.probePort }).catch(fatal);
}
report({ type: 'ready' });

// The payload changes now and then, so observers see updates.
let updating: Promise<void> = Promise.resolve();
let rejoining = false;
const updates = setInterval(() => {
  if (!rejoining) updating = member.update(nextPayload()).catch((err: unknown) => void reportError('update', err));
}, spec.updateIntervalMs);

// The lock: wait for it, hold it a while (or until it is lost), release it, wait again.
void (async () => {
  while (!closing.signal.aborted) {
    try {
      lock = await registry.lock(spec.lock, { signal: closing.signal });
      const t = lockAnnouncedAt ?? monotonicMs();
      report({ type: 'lockAcquired', token: lock.fencingToken, valid: lock.held, t });
    } catch (err) {
      if (closing.signal.aborted) return;
      reportError('lock', err);
      await new Promise((resolve) => setTimeout(resolve, 250));
      continue;
    }
    const held = lock;
    const [min, max] = spec.lockHoldMs;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, min + Math.random() * (max - min));
      held.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    lock = undefined;
    if (!held.signal.aborted) await held.release().catch((err: unknown) => void reportError('release', err));
  }
})();

// Sampling: the state as the application would read it, a write to the resource while it says so.
const belief: Record<Fenced, number | undefined> = { election: undefined, lock: undefined };
const lastWrite: Record<Fenced, number> = { election: -Infinity, lock: -Infinity };
const writing: Record<Fenced, boolean> = { election: false, lock: false };
let lastTick = monotonicMs();

function sample(of: Fenced, t: number, token: number | undefined): void {
  if (token !== belief[of]) {
    belief[of] = token;
    report({ type: 'belief', of, token, t });
  }
  if (token === undefined || writing[of] || t - lastWrite[of] < spec!.writeIntervalMs) return;
  writing[of] = true;
  lastWrite[of] = t;
  void writeFenced(spec!.resourceUrl, { of, token, writer: spec!.name, incarnation: spec!.incarnation, readAt: t }, 2000).then((outcome) => {
    writing[of] = false;
    report({ type: 'write', of, token, outcome, t });
  });
}

const ticker = setInterval(() => {
  // Taken before the reads: a read is never earlier than its timestamp.
  const t = monotonicMs();
  if (t - lastTick > spec.stallThresholdMs) report({ type: 'stall', from: lastTick, t });
  lastTick = t;
  sample('election', t, leadership.fencingToken);
  const held = lock;
  sample('lock', t, held?.held ? held.fencingToken : undefined);
}, spec.tickMs);

async function run(command: CandidateCommand): Promise<void> {
  switch (command.op) {
    case 'resign': {
      const resigning = leadership;
      failover?.close();
      await resigning.resign();
      leadership = registry.campaign(spec!.election);
      failover = failOver(leadership);
      return;
    }
    case 'rejoin': {
      rejoining = true;
      try {
        await updating;
        const payload = nextPayload();
        const from = monotonicMs();
        const racing = member.update(payload).then(
          () => 'written',
          (err: unknown) => describe(err).code ?? 'error',
        );
        // Half the time at once (the update has not started: CLOSED), else while its write may be in flight.
        if (Math.random() < 0.5) await new Promise((resolve) => setTimeout(resolve, Math.random() * 30));
        await member.withdraw().catch((err: unknown) => void reportError('withdraw', err));
        report({ type: 'raced', payload, outcome: await racing, from });
        member = await registry.announce({ role: spec!.role, id: spec!.name, payload: nextPayload() });
      } finally {
        rejoining = false;
      }
      return;
    }
    case 'handoff': {
      closing.abort();
      await leadership.resign();
      const held = lock;
      if (held?.held) await held.release();
      report({ type: 'handedOff' });
      return;
    }
    case 'checkpoint': {
      // members() reads the view synchronously, right after the last event reported.
      const after = sequence;
      const members = await registry.members(spec!.role);
      report({ type: 'members', checkpoint: command.checkpoint, after, members: members.map((m) => ({ id: m.id, payload: m.payload })) });
      return;
    }
    case 'quiesce': {
      clearInterval(updates);
      await updating;
      report({ type: 'quiesced', payload: member.payload });
      return;
    }
    case 'shutdown': {
      clearInterval(updates);
      clearInterval(ticker);
      closing.abort();
      await registry.close();
      process.exit(0);
    }
  }
}

up();
