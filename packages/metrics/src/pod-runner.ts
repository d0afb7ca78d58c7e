import { InvalidArgumentError } from '@rollcall/core';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';
import type { Registry as PromRegistry } from 'prom-client';
import { POD_RUNNER_METRICS } from './catalog.js';
import { createInstruments, type InstrumentsOf, removeInstruments } from './instruments.js';
import { DEFAULT_REQUEST_BUCKETS_SECONDS } from './options.js';

/**
 * The part of a `PodRunner` the metrics read: its name, whether it acts, its
 * queue, and its activity. The activity's type comes from the types-only
 * `@rollcall/pod-runner-activity`, so this package installs neither the runner
 * nor a Kubernetes client.
 */
export interface ObservablePodRunner {
  readonly name: string;
  readonly namespace: string;
  readonly isLeader: boolean;
  readonly queueDepth: number;
  /** Adds a listener, first told every task that has not ended; returns the function that removes it. */
  observe(listener: (activity: RunnerActivity) => void): () => void;
}

/** What `registerPodRunnerMetrics` takes beyond the runner and the prom registry. */
export interface PodRunnerMetricsOptions {
  /** Upper bounds of `rollcall_pod_runner_pending_seconds`, seconds. Default {@link DEFAULT_PENDING_BUCKETS_SECONDS}, 1 s to 30 min. */
  pendingBuckets?: readonly number[];
  /** Upper bounds of `rollcall_pod_runner_request_duration_seconds`, seconds. Default the registry's, 1 ms to 10 s. */
  requestDurationBuckets?: readonly number[];
}

/** 1 s (an image already on the node) to 30 min (past the default 5 min unschedulable and 10 min start timeouts). Seconds. */
export const DEFAULT_PENDING_BUCKETS_SECONDS: readonly number[] = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** The phases `rollcall_pod_runner_tasks` counts: those a task leaves. */
const OPEN_PHASES: ReadonlySet<string> = new Set(['queued', 'pending', 'running', 'unknown']);

/** What `registerPodRunnerMetrics` returns. */
export interface PodRunnerMetrics {
  /** Stops following the runner and removes its metrics from the prom-client Registry. Idempotent; done by itself when the runner closes. */
  close(): void;
}

/**
 * Registers the pod runner metrics (see `POD_RUNNER_METRICS`) on
 * `promRegistry` and keeps them up to date from `runner.observe()`, until
 * `close()` or until the runner closes. Tasks that have not ended are counted
 * from registration; counters count from then on.
 *
 * @example
 * const runner = await createPodRunner({ ... });
 * registerPodRunnerMetrics(runner, promRegistry);
 */
export function registerPodRunnerMetrics(runner: ObservablePodRunner, promRegistry: PromRegistry, options: PodRunnerMetricsOptions = {}): PodRunnerMetrics {
  if (typeof promRegistry?.getSingleMetric !== 'function') throw new InvalidArgumentError('registerPodRunnerMetrics() takes a prom-client Registry as its second argument');
  if (typeof runner?.observe !== 'function') throw new InvalidArgumentError('registerPodRunnerMetrics() takes a pod runner (createPodRunner\'s answer) as its first argument');
  const m = createInstruments(promRegistry, POD_RUNNER_METRICS, { podRunnerPendingSeconds: options.pendingBuckets ?? DEFAULT_PENDING_BUCKETS_SECONDS, podRunnerRequestDuration: options.requestDurationBuckets ?? DEFAULT_REQUEST_BUCKETS_SECONDS });
  let closed = false;
  let off: () => void = () => {};
  const close = () => {
    if (closed) return;
    closed = true;
    off();
    removeInstruments(promRegistry, POD_RUNNER_METRICS, m);
  };
  m.podRunnerInfo.set({ runner: runner.name, namespace: runner.namespace }, 1);
  gaugeAtScrape(m, runner);
  off = runner.observe((activity) => track(m, activity, close));
  return { close };
}

/** `rollcall_pod_runner_leader` and `rollcall_pod_runner_queue_depth` are the runner's state, read at each scrape (prom-client calls a gauge's `collect` first): no event to miss. */
function gaugeAtScrape(m: InstrumentsOf<typeof POD_RUNNER_METRICS>, runner: ObservablePodRunner): void {
  (m.podRunnerLeader as unknown as { collect: () => void }).collect = () => m.podRunnerLeader.set(runner.isLeader ? 1 : 0);
  (m.podRunnerQueueDepth as unknown as { collect: () => void }).collect = () => m.podRunnerQueueDepth.set(runner.queueDepth);
}

function track(m: InstrumentsOf<typeof POD_RUNNER_METRICS>, activity: RunnerActivity, close: () => void): void {
  switch (activity.type) {
    case 'status': {
      const task_type = activity.taskType;
      if (activity.previousPhase !== undefined && OPEN_PHASES.has(activity.previousPhase)) m.podRunnerTasks.dec({ phase: activity.previousPhase, task_type });
      if (OPEN_PHASES.has(activity.phase)) m.podRunnerTasks.inc({ phase: activity.phase, task_type });
      else if (!activity.quiet) m.podRunnerTasksFinished.inc({ phase: activity.phase, reason: activity.reason ?? '', task_type });
      return;
    }
    case 'pending':
      m.podRunnerPendingSeconds.observe({ cause: activity.cause }, activity.seconds);
      return;
    case 'requeue':
      m.podRunnerRequeues.inc({ reason: activity.reason });
      return;
    case 'retry':
      m.podRunnerRetries.inc({ reason: activity.reason, task_type: activity.taskType });
      return;
    case 'watchEnded':
      m.podRunnerWatchRestarts.inc({ code: activity.code });
      return;
    case 'request': {
      const code = activity.code ?? 'OK';
      m.podRunnerRequests.inc({ verb: activity.verb, resource: activity.resource, code });
      m.podRunnerRequestDuration.observe({ verb: activity.verb, code }, activity.durationMs / 1000);
      return;
    }
    case 'fenced':
      m.podRunnerFencedWrites.inc({ verb: activity.verb });
      return;
    case 'closed':
      close();
      return;
  }
}
