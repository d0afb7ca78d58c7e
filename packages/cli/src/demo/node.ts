import { readFileSync } from 'node:fs';
import { serveParent, type ParentLink } from '@rollcall/child-harness';
import { createRegistry, shutdownOnSignals, type JsonValue, type Leadership, type MemberHandle, type Registry } from '@rollcall/core';
import type { Task, TaskStatus, TemplateRule } from '@rollcall/pod-runner';
import { resolveCliConfig } from '../config.js';
import { serveRunnerMetrics } from '../metrics.js';
import { loadPodRunner } from '../pod-runner.js';

/** What `demo --pods` gives its runner processes: the pair's name, the templates and the tasks each submits. */
export interface PodsSpec {
  name: string;
  templates: TemplateRule[];
  tasks: Task[];
}

/** A worker incarnation, as the task table names an item's owner. */
export interface ItemOwner {
  id: string;
  incarnation: string;
}

/** What a demo node tells the demo, as events of the child-process harness. */
export type NodeMessage =
  | { type: 'ready'; id: string; pid: number; incarnation?: string }
  | { type: 'elected'; id: string; fencingToken: number; at: number }
  | { type: 'lost'; id: string; fencingToken: number; reason: string; at: number }
  | { type: 'withdrawn'; id: string }
  | { type: 'failed'; id: string; message: string }
  | { type: 'task'; id: string; status: TaskStatus }
  | { type: 'metrics'; id: string; port: number }
  /** A worker ran its items (once per heartbeat, only while its incarnation is alive). */
  | { type: 'ran'; id: string; incarnation: string; items: string[] }
  /** A worker's incarnation was lost: it stops its items instead of running them. */
  | { type: 'stopped'; id: string; incarnation: string; items: string[]; reason: string }
  /** A worker announced itself again, as a new incarnation with no items. */
  | { type: 'reannounced'; id: string; incarnation: string; previous: string }
  /** The leading master's failover handler started on a dead worker incarnation. */
  | { type: 'failover'; id: string; dead: ItemOwner; reason: string; resumed: boolean; items: string[]; fencingToken: number }
  /** The handler moves one item of a dead incarnation to a live worker, under its fencing token. */
  | { type: 'moved'; id: string; item: string; from: ItemOwner; to: ItemOwner; fencingToken: number }
  /** The failover of a dead incarnation was acknowledged: never run again. */
  | { type: 'acknowledged'; id: string; dead: ItemOwner };

/**
 * What the demo tells a node: a worker takes an item (the task table assigned
 * it to its incarnation); `pause`: it stops itself (SIGSTOP) between two of its
 * turns, so that it holds no sqlite write lock while stopped.
 */
export type NodeCommand = { op: 'take'; item: string; incarnation: string } | { op: 'pause' };

export interface NodeFlags {
  kind: 'master' | 'worker' | 'pod-runner';
  id: string;
  config: string;
  /** For `pod-runner`: the PodsSpec file. */
  pods?: string;
  /** For `pod-runner`: serve the runner's and its registry's metrics on this port (0: any free one). */
  metricsPort?: string;
}

/** The demo, this node's parent; set once the node starts serving it. */
let demo: ParentLink<NodeMessage> | undefined;

function send(message: NodeMessage): void {
  demo?.report(message);
}

/** A scheduler node's runtime data: what workers publish in their heartbeats. */
function heartbeat(seed: number, tick: number): { [key: string]: JsonValue } {
  const wave = (phase: number) => (Math.sin(tick / 3 + seed * 1.7 + phase) + 1) / 2;
  const load = Number((0.2 + 3.6 * wave(0)).toFixed(2));
  return { cpu: Number((0.05 + 0.9 * wave(1)).toFixed(2)), memory: Number((0.2 + 0.7 * wave(2)).toFixed(2)), load, status: load > 3 ? 'BUSY' : 'NORMAL' };
}

/**
 * `rollcall demo-node` (hidden): one process of the demo cluster. A master
 * announces itself, campaigns for `scheduler` and fails dead workers over
 * while it leads; a worker announces itself, updates its heartbeat payload and
 * runs the items the demo's task table gives it while its incarnation is alive. SIGTERM withdraws gracefully; losing the
 * demo (its IPC channel) does too, so no node outlives it.
 */
export async function demoNode(flags: NodeFlags): Promise<void> {
  const config = await resolveCliConfig({ config: flags.config }, {});
  const registry: Registry = await createRegistry({ ...config.flat, 'registry.identity': flags.id } as never);
  let closing = false;
  let runner: { close(): Promise<void> } | undefined;
  let stopMetrics: (() => Promise<void>) | undefined;
  // SIGTERM: the bounded shutdown every Rollcall process should use (withdraw, resign, exit 143).
  // Ctrl-C reaches the whole process group: the demo, which gets it too, stops its nodes in order, so SIGINT is not ours.
  const { done } = shutdownOnSignals(registry, {
    signals: ['SIGTERM'],
    beforeClose: async () => {
      closing = true;
      await runner?.close();
      await stopMetrics?.();
    },
  });
  void done.then(() => send({ type: 'withdrawn', id: flags.id }));
  process.on('SIGINT', () => {});
  // Losing the demo (its IPC channel): the same close, so no node outlives it.
  let onCommand: (command: NodeCommand) => unknown = () => false;
  demo = serveParent<never, NodeCommand, NodeMessage>({ onCommand: (command) => onCommand(command), onParentGone: () => process.kill(process.pid, 'SIGTERM') });

  if (flags.kind === 'pod-runner') {
    // one of the pair: both submit every task, only the elected one creates pods
    const spec = JSON.parse(readFileSync(flags.pods!, 'utf8')) as PodsSpec;
    const { createPodRunner } = await loadPodRunner('rollcall demo --pods');
    const options = config.resolved.options as { namespace?: string; kubeconfig?: string; context?: string };
    const podRunner = await createPodRunner({ registry, identity: flags.id, name: spec.name, templates: spec.templates, namespace: options.namespace, kubeconfig: options.kubeconfig, context: options.context, onStatus: (status) => send({ type: 'task', id: flags.id, status }) });
    runner = podRunner;
    if (flags.metricsPort !== undefined) {
      const served = await serveRunnerMetrics(registry, podRunner, Number(flags.metricsPort));
      stopMetrics = served.stop;
      send({ type: 'metrics', id: flags.id, port: served.port });
    }
    for (const task of spec.tasks) await podRunner.submit(task);
    send({ type: 'ready', id: flags.id, pid: process.pid });
    return;
  }

  if (flags.kind === 'worker') {
    const worker = await runWorker(registry, flags.id, config.resolved.member.heartbeatIntervalMs, () => closing);
    onCommand = worker.take;
    send({ type: 'ready', id: flags.id, pid: process.pid, incarnation: worker.handle.incarnation });
  } else {
    await runMaster(registry, flags.id);
    send({ type: 'ready', id: flags.id, pid: process.pid });
  }
}

/**
 * A worker: announces itself with a heartbeat payload and the items its
 * incarnation holds, and runs them — reports `ran` once per heartbeat — only
 * while its incarnation is alive, read from the clock at that moment, so a
 * process resumed from a pause stops instead of running them. A lost
 * incarnation drops its items (`stopped`); the next one starts with none.
 */
async function runWorker(registry: Registry, id: string, heartbeatMs: number, closing: () => boolean): Promise<{ handle: MemberHandle; take(command: NodeCommand): boolean | undefined }> {
  const seed = Number(id.replace(/\D/g, '')) || 1;
  let tick = 0;
  let items: string[] = [];
  const payload = () => ({ ...heartbeat(seed, tick), items });
  const handle = await registry.announce({ role: 'worker', id, payload: payload() });
  handle.on('lost', ({ incarnation, reason }) => {
    send({ type: 'stopped', id, incarnation, items, reason });
    items = [];
  });
  handle.on('reannounced', ({ incarnation, previous }) => send({ type: 'reannounced', id, incarnation, previous }));
  setInterval(() => {
    if (closing()) return;
    tick++;
    const incarnation = handle.incarnation;
    if (!handle.alive || incarnation === undefined) return;
    send({ type: 'ran', id, incarnation, items });
    handle.update(payload()).catch(() => {});
  }, heartbeatMs);
  return {
    handle,
    take: (command) => {
      // A transaction of the sqlite store runs within one turn: stopped from a turn of its own, the process holds no lock.
      if (command.op === 'pause') return void setImmediate(() => process.kill(process.pid, 'SIGSTOP'));
      // An item given to an incarnation that is no longer this one's is not taken.
      if (!handle.alive || command.incarnation !== handle.incarnation) return false;
      items = [...items, command.item];
      handle.update(payload()).catch(() => {});
      return true;
    },
  };
}

/** A master: announces itself, campaigns for `scheduler` and, while leading, fails dead workers over. */
async function runMaster(registry: Registry, id: string): Promise<void> {
  const handle = await registry.announce({ role: 'master', id, payload: { status: 'NORMAL' } });
  const leadership = registry.campaign('scheduler', id);
  leadership.on('elected', ({ fencingToken }) => {
    send({ type: 'elected', id, fencingToken, at: Date.now() });
    handle.update({ status: 'LEADING', fencingToken }).catch(() => {});
  });
  leadership.on('lost', ({ fencingToken, reason }) => {
    send({ type: 'lost', id, fencingToken, reason, at: Date.now() });
    handle.update({ status: 'NORMAL' }).catch(() => {});
  });
  leadership.on('error', ({ error }) => send({ type: 'failed', id, message: error.message }));
  failWorkersOver(registry, leadership, id);
}

/**
 * The scheduler's failover, as a master runs it: while leading, each removed
 * worker incarnation's items (from its last payload) go to the live workers,
 * one `moved` at a time under the fencing token; the demo's task table applies
 * each move once and refuses a smaller token. Graceful withdraws too: their
 * items need a new worker as much as a crashed one's.
 */
function failWorkersOver(registry: Registry, leadership: Leadership, id: string): void {
  const failover = registry.failover(
    'worker',
    leadership,
    async (dead, { fencingToken, signal, resumed }) => {
      const from = { id: dead.id, incarnation: dead.incarnation };
      const held = itemsOf(dead.lastPayload);
      send({ type: 'failover', id, dead: from, reason: dead.reason, resumed, items: held, fencingToken });
      const live = (await registry.members('worker')).filter((m) => m.id !== dead.id);
      if (held.length > 0 && live.length === 0) throw new Error('no live worker to take the items');
      for (const [i, item] of held.entries()) {
        if (signal.aborted) throw signal.reason; // the term ended: the next leader resumes
        const to = live[i % live.length]!;
        send({ type: 'moved', id, item, from, to: { id: to.id, incarnation: to.incarnation }, fencingToken });
      }
    },
    { includeWithdrawn: true },
  );
  failover.on('acknowledged', (dead) => send({ type: 'acknowledged', id, dead: { id: dead.id, incarnation: dead.incarnation } }));
}

function itemsOf(payload: JsonValue | undefined): string[] {
  const items = (payload as { items?: unknown } | undefined)?.items;
  return Array.isArray(items) ? items.filter((i): i is string => typeof i === 'string') : [];
}
