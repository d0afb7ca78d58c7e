/**
 * A worker OS process of the scale benchmark: hosts simulated processes, each
 * a registry on a store of its own (connected by the backend's plugin, wrapped
 * to count the watch events delivered to it), with the backend's default
 * timings. Takes requests from the coordinator through the child-process
 * harness (protocol.ts); reports what the masters see of tracked members and
 * every leadership change.
 */
import { serveParent } from '@rollcall/child-harness';
import { createRegistry, type Leadership, type MemberHandle, type Registry, type RegistryType } from '@rollcall/core';
import { loadPlugin } from '@rollcall/core/admin';
import { pluginContext, type RecordStore, type RegistryPlugin } from '@rollcall/core/spi';
import { monotonicMs } from '../../testenv/measure/monotonic.js';
import type { BackendConfig } from '../target.js';
import type { BenchMember, ScaleBackend } from './args.js';
import { countingStore, emptyWatchCounts } from './counting-store.js';
import { MASTER_ROLE, TRACKED_MEMBER, WORKER_ROLE, type Request, type SimProcess, type WorkerEvent, type WorkerStatus } from './protocol.js';

/** One simulated process, once open. */
interface Simulated {
  role: SimProcess['role'];
  /** Announced a member of its own (not a candidate of the elections-only baseline). */
  member: boolean;
  registry: Registry;
  /** Members it announced, by id: its own, and announce probes. */
  members: Map<string, MemberHandle>;
  campaigns: Map<string, Leadership>;
  /** Its member announced (or, a candidate only, its campaigns started): one whose announce failed is kept to be closed, but neither opened nor a worker the masters should see. */
  open: boolean;
}

const simulated = new Map<string, Simulated>();
const seen = new Map<string, Set<string>>();
const watch = { [MASTER_ROLE]: emptyWatchCounts(), [WORKER_ROLE]: emptyWatchCounts() };
const errors: string[] = [];
let failed = 0;
const openMs: number[] = [];

/** Connects a store of `plugin` for `cluster` with the backend's section of the configuration, validated as the keys are. */
function connector(plugin: RegistryPlugin): (section: Record<string, unknown>, cluster: string, identity: string) => Promise<RecordStore> {
  return (section, cluster, identity) => plugin.connect({ ...pluginContext(plugin, { ...section, cluster }), identity });
}

function campaign(process: string, sim: Simulated, election: string): void {
  const leadership = sim.registry.campaign(election);
  sim.campaigns.set(election, leadership);
  leadership.on('elected', () => parent.report({ kind: 'leader', process, election, type: 'elected', at: monotonicMs() }));
  leadership.on('lost', () => parent.report({ kind: 'leader', process, election, type: 'lost', at: monotonicMs() }));
}

async function openOne(backend: BackendConfig, cluster: string, member: BenchMember, spec: SimProcess, connect: ReturnType<typeof connector>): Promise<void> {
  const { type, ...sections } = backend;
  const section = (sections[type] ?? {}) as Record<string, unknown>;
  // its own pod, in pod mode: registry.kubernetes.podUid (the one backend with pod liveness)
  const store = countingStore(await connect(spec.podUid === undefined ? section : { ...section, podUid: spec.podUid }, cluster, spec.id), watch[spec.role]);
  // elections at the default timings, 15 / 10 / 2 s
  const registry = await createRegistry({ type: type as RegistryType, cluster, identity: spec.id, member }, { store });
  const sim: Simulated = { role: spec.role, member: spec.member !== false, registry, members: new Map(), campaigns: new Map(), open: false };
  simulated.set(spec.id, sim);
  if (!sim.member) {
    for (const election of spec.campaigns) campaign(spec.id, sim, election);
    sim.open = true;
    return;
  }
  if (spec.role === MASTER_ROLE) {
    const workers = new Set<string>();
    seen.set(spec.id, workers);
    registry.watchMembers(WORKER_ROLE, (event) => {
      if (event.type === 'updated') return;
      const at = monotonicMs();
      if (event.type === 'added') workers.add(event.member.id);
      else workers.delete(event.member.id);
      if (TRACKED_MEMBER.test(event.member.id)) parent.report({ kind: 'seen', watcher: spec.id, member: event.member.id, type: event.type, at });
    });
  }
  sim.members.set(spec.id, await registry.announce({ role: spec.role, id: spec.id, payload: { status: 'NORMAL' } }));
  for (const election of spec.campaigns) campaign(spec.id, sim, election);
  sim.open = true;
}

/** Opens `processes`, `concurrency` at a time; one that fails is counted, not fatal. */
async function open(request: Extract<Request, { op: 'open' }>): Promise<WorkerStatus> {
  if (request.backend.type !== backendType) throw new Error(`this worker loaded ${backendType}, not ${request.backend.type}`);
  const queue = [...request.processes];
  const lane = async () => {
    for (let spec = queue.shift(); spec; spec = queue.shift()) {
      const started = monotonicMs();
      await openOne(request.backend, request.cluster, request.member, spec, connect).then(
        () => openMs.push(monotonicMs() - started),
        (err: unknown) => {
          failed++;
          if (errors.length < 5) errors.push(`${spec.id}: ${(err as Error).message}`);
        },
      );
    }
  };
  await Promise.all(Array.from({ length: request.concurrency }, lane));
  return status();
}

function status(): WorkerStatus {
  const open = [...simulated.values()].filter((s) => s.open);
  return { opened: open.length, openedWorkers: open.filter((s) => s.role === WORKER_ROLE && s.member).length, failed, errors, openMs, seen: Object.fromEntries([...seen].map(([master, workers]) => [master, workers.size])), watch: { master: { ...watch.master }, worker: { ...watch.worker } } };
}

function sim(id: string): Simulated {
  const found = simulated.get(id);
  if (!found) throw new Error(`no simulated process ${id} here`);
  return found;
}

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'open':
      return open(request);
    case 'status':
      if (request.gc) collectGarbage();
      return status();
    case 'announce': {
      const at = monotonicMs();
      sim(request.process).members.set(request.member, await sim(request.process).registry.announce({ role: WORKER_ROLE, id: request.member, payload: { status: 'NORMAL' } }));
      return { at };
    }
    case 'withdraw': {
      const handle = sim(request.process).members.get(request.member);
      sim(request.process).members.delete(request.member);
      await handle?.withdraw();
      return {};
    }
    case 'resign': {
      const leadership = sim(request.process).campaigns.get(request.election);
      if (!leadership) throw new Error(`${request.process} does not campaign in ${request.election}`);
      sim(request.process).campaigns.delete(request.election);
      const at = monotonicMs();
      await leadership.resign();
      return { at };
    }
    case 'campaign':
      campaign(request.process, sim(request.process), request.election);
      return {};
    case 'close':
      await Promise.allSettled([...simulated.values()].map((s) => s.registry.close()));
      simulated.clear();
      return {};
  }
}

// The coordinator gone (it crashed, or killed us): nothing left to serve, and serveParent exits.
const parent = serveParent<never, Request, WorkerEvent>({ onCommand: handle });
/** A full collection (the process runs with --expose-gc), so RSS is read without the garbage of loading or of the window. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// loaded before ready, so the process's RSS when empty includes the backend's code
const backendType = process.argv[2] as ScaleBackend;
// The backend's plugin as `registry.type` loads it (the package by name at run time: the backends' tests and benchmarks depend on tools, not the other way).
const connect = connector(await loadPlugin(backendType));
collectGarbage();
parent.ready();
