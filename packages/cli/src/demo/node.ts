import { readFileSync } from 'node:fs';
import { serveParent, type ParentLink } from '@rollcall/child-harness';
import { createRegistry, shutdownOnSignals, type JsonValue, type Registry } from '@rollcall/core';
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

/** What a demo node tells the demo, as events of the child-process harness. */
export type NodeMessage =
  | { type: 'ready'; id: string; pid: number }
  | { type: 'elected'; id: string; fencingToken: number; at: number }
  | { type: 'lost'; id: string; fencingToken: number; reason: string; at: number }
  | { type: 'withdrawn'; id: string }
  | { type: 'failed'; id: string; message: string }
  | { type: 'task'; id: string; status: TaskStatus }
  | { type: 'metrics'; id: string; port: number };

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
 * announces itself and campaigns for `scheduler`; a worker announces itself
 * and updates its heartbeat payload. SIGTERM withdraws gracefully; losing the
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
  demo = serveParent<never, never, NodeMessage>({ onParentGone: () => process.kill(process.pid, 'SIGTERM') });

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

  const seed = Number(flags.id.replace(/\D/g, '')) || 1;
  let tick = 0;
  const member = await registry.announce({ role: flags.kind, id: flags.id, payload: flags.kind === 'worker' ? heartbeat(seed, tick) : { status: 'NORMAL' } });
  if (flags.kind === 'worker') {
    setInterval(() => {
      if (!closing) member.update(heartbeat(seed, ++tick)).catch(() => {});
    }, config.resolved.member.heartbeatIntervalMs);
  } else {
    const leadership = registry.campaign('scheduler', flags.id);
    leadership.on('elected', ({ fencingToken }) => {
      send({ type: 'elected', id: flags.id, fencingToken, at: Date.now() });
      member.update({ status: 'LEADING', fencingToken }).catch(() => {});
    });
    leadership.on('lost', ({ fencingToken, reason }) => {
      send({ type: 'lost', id: flags.id, fencingToken, reason, at: Date.now() });
      member.update({ status: 'NORMAL' }).catch(() => {});
    });
    leadership.on('error', ({ error }) => send({ type: 'failed', id: flags.id, message: error.message }));
  }
  send({ type: 'ready', id: flags.id, pid: process.pid });
}
