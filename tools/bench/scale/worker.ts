/**
 * A worker OS process of the scale benchmark: hosts simulated processes, each
 * a registry on a store of its own (the backend's `create…Store`, wrapped to
 * count the watch events delivered to it), with the backend's default timings.
 * Takes requests from the coordinator over IPC (protocol.ts); reports what
 * the masters see of tracked members and every leadership change.
 */
import { createRegistry, type Leadership, type MemberHandle, type MemberConfig, type Registry, type RegistryType } from '@rollcall/core';
import { PLUGIN_PACKAGES } from '@rollcall/core/admin';
import { type RecordStore } from '@rollcall/core/spi';
import { monotonicMs } from '../../testenv/monotonic.js';
import type { BackendConfig } from '../target.js';
import { countingStore, emptyWatchCounts } from './counting-store.js';
import { MASTER_ROLE, TRACKED_MEMBER, WORKER_ROLE, type FromWorker, type Request, type SimProcess, type ToWorker, type WorkerStatus } from './protocol.js';

/** One simulated process, once open. */
interface Simulated {
  role: SimProcess['role'];
  registry: Registry;
  /** Members it announced, by id: its own, and announce probes. */
  members: Map<string, MemberHandle>;
  campaigns: Map<string, Leadership>;
}

const simulated = new Map<string, Simulated>();
const seen = new Map<string, Set<string>>();
const watch = { [MASTER_ROLE]: emptyWatchCounts(), [WORKER_ROLE]: emptyWatchCounts() };
const errors: string[] = [];
let failed = 0;
const openMs: number[] = [];

function send(message: FromWorker): void {
  process.send?.(message);
}

/** The backend's `create<Type>Store` factory, e.g. `createEtcdStore` of `@rollcall/etcd`. */
async function storeFactory(type: string): Promise<(options: Record<string, unknown>) => Promise<RecordStore>> {
  const name = `create${type[0]!.toUpperCase()}${type.slice(1)}Store`;
  const mod = (await import(PLUGIN_PACKAGES[type]!)) as Record<string, unknown>;
  const factory = mod[name];
  if (typeof factory !== 'function') throw new Error(`${PLUGIN_PACKAGES[type]} exports no ${name}`);
  return factory as (options: Record<string, unknown>) => Promise<RecordStore>;
}

function campaign(process: string, sim: Simulated, election: string): void {
  const leadership = sim.registry.campaign(election);
  sim.campaigns.set(election, leadership);
  leadership.on('elected', () => send({ kind: 'leader', process, election, type: 'elected', at: monotonicMs() }));
  leadership.on('lost', () => send({ kind: 'leader', process, election, type: 'lost', at: monotonicMs() }));
}

async function openOne(backend: BackendConfig, cluster: string, member: MemberConfig, spec: SimProcess, create: (o: Record<string, unknown>) => Promise<RecordStore>): Promise<void> {
  const { type, ...sections } = backend;
  const store = countingStore(await create({ ...(sections[type] as Record<string, unknown>), cluster }), watch[spec.role]);
  // elections at the default timings, 15 / 10 / 2 s
  const registry = await createRegistry({ type: type as RegistryType, cluster, identity: spec.id, member }, { store });
  const sim: Simulated = { role: spec.role, registry, members: new Map(), campaigns: new Map() };
  simulated.set(spec.id, sim);
  if (spec.role === MASTER_ROLE) {
    const workers = new Set<string>();
    seen.set(spec.id, workers);
    registry.watchMembers(WORKER_ROLE, (event) => {
      if (event.type === 'updated') return;
      const at = monotonicMs();
      if (event.type === 'added') workers.add(event.member.id);
      else workers.delete(event.member.id);
      if (TRACKED_MEMBER.test(event.member.id)) send({ kind: 'seen', watcher: spec.id, member: event.member.id, type: event.type, at });
    });
  }
  sim.members.set(spec.id, await registry.announce({ role: spec.role, id: spec.id, payload: { status: 'NORMAL' } }));
  for (const election of spec.campaigns) campaign(spec.id, sim, election);
}

/** Opens `processes`, `concurrency` at a time; one that fails is counted, not fatal. */
async function open(request: Extract<Request, { op: 'open' }>): Promise<WorkerStatus> {
  if (request.backend.type !== backendType) throw new Error(`this worker loaded ${backendType}, not ${request.backend.type}`);
  const queue = [...request.processes];
  const lane = async () => {
    for (let spec = queue.shift(); spec; spec = queue.shift()) {
      const started = monotonicMs();
      await openOne(request.backend, request.cluster, request.member, spec, create).then(
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
  return { opened: simulated.size, openedWorkers: [...simulated.values()].filter((s) => s.role === WORKER_ROLE).length, failed, errors, openMs, seen: Object.fromEntries([...seen].map(([master, workers]) => [master, workers.size])), watch: { master: { ...watch.master }, worker: { ...watch.worker } } };
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

process.on('message', (message: ToWorker) => {
  handle(message).then(
    (value) => send({ kind: 'reply', id: message.id, ok: true, value }),
    (err: unknown) => send({ kind: 'reply', id: message.id, ok: false, error: (err as Error).message }),
  );
});
// the coordinator gone (it crashed, or killed us): nothing left to serve
process.on('disconnect', () => process.exit(0));
/** A full collection (the process runs with --expose-gc), so RSS is read without the garbage of loading or of the window. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// loaded before ready, so the process's RSS when empty includes the backend's code
const backendType = process.argv[2]!;
const create = await storeFactory(backendType);
collectGarbage();
send({ kind: 'ready' });
