import type { KubeConfig } from '@kubernetes/client-node';
import { type Clock, DEFAULT_REQUEST_TIMEOUT_MS, type Logger, type Registry, resolveOptions, type ResolveSpec, silentLogger, systemClock } from '@rollcall/core';
import { BACKEND } from './errors.js';
import type { TaskLogOptions } from './log-sink.js';
import { DEFAULT_MAX_LOG_BYTES } from './log-writer.js';
import type { TemplateRule } from './templates.js';
import { DEFAULT_TIMEOUTS, type TaskStatus, type TaskTimeouts } from './task.js';

/** Concurrency limits: pods pending or running at once. */
export interface CapacityOptions {
  /** All task types together. Default 50. */
  total?: number;
  /** Per task type; a type not named is bounded by `total` only. */
  perType?: Record<string, number>;
}

/** Keep a `done` record this long after its status was acknowledged. Milliseconds: 24 h. */
export const DEFAULT_RETAIN_DONE_MS = 86_400_000;
/** @deprecated The task ledger's tombstone cap: records are kept by age alone (`records.retainDoneMs`); `ledger.maxDone` is ignored. */
export const DEFAULT_MAX_DONE = 1000;

/**
 * The task records: one ConfigMap per task (`<name>-task-<id>-<hash>`). An
 * acknowledged task's record is kept `done`, with its whole status, so a
 * resubmit runs nothing and `result`/`logs` answer after a restart; it is
 * deleted `retainDoneMs` after the acknowledgement — by age alone, never by
 * count or load. A task resubmitted after its record is gone runs again.
 */
export interface RecordOptions {
  /** How long a `done` record is kept after its status was acknowledged. Milliseconds. Default 86400000 (24 h). */
  retainDoneMs?: number;
}

/** @deprecated The v1 task ledger's options: `retainDoneMs` is read as `records.retainDoneMs` when that is not given; `maxDone` is ignored, with a warning. */
export interface LedgerOptions {
  /** @deprecated Use `records.retainDoneMs`. */
  retainDoneMs?: number;
  /** @deprecated Ignored: records are kept by age alone. */
  maxDone?: number;
}

/** What {@link createPodRunner} takes. */
export interface PodRunnerOptions {
  /** Ordered template rules; the first that matches a task builds its pod. See {@link TemplateRule}. */
  templates: TemplateRule[];
  /** Namespace of the pods. Default: `POD_NAMESPACE`, else the service account's, else the kubeconfig context's, else `default` (as the registry finds it). */
  namespace?: string;
  /** Labels this runner's pods (`rollcall.dev/runner=<name>`), which its one watch selects. Runners of an HA pair share it. A DNS label of at most 30 characters. Default `rollcall`. */
  name?: string;
  capacity?: CapacityOptions;
  /** Timeouts for tasks that set none of their own, milliseconds. Defaults: unschedulable 300000, imagePull 300000, start 600000, unknown 300000, run none, queue none, gated none. A value that is not a positive number is INVALID_CONFIG. */
  timeouts?: TaskTimeouts;
  /** Keep the pod of a task that did not succeed this long after it is recorded, for `kubectl describe`. Milliseconds. Default 0: deleted at once, like every finished pod. */
  keepFailedPodsMs?: number;
  /** First wait before creating again after a quota refusal (403 "exceeded quota"), a 429 or a quota race (409 Conflict on create); doubles up to 30 s, and a pod finishing retries at once. Milliseconds. Default 1000. */
  requeueDelayMs?: number;
  /**
   * Each task's log is copied, while it runs, into a sink, so `logs()` and
   * `rollcall tasks logs` serve it after the pod is gone. Default: files under
   * {@link DEFAULT_LOG_DIR}, 10 MiB per task attempt. `false`: nothing is captured
   * (logs are read from the pod while it exists).
   */
  logs?: TaskLogOptions | false;
  /** Path of a kubeconfig file. Default as kubectl: `KUBECONFIG`, `~/.kube/config`, or the in-cluster service account. */
  kubeconfig?: string;
  /** Kubeconfig context. Default the current one. */
  context?: string;
  /** A KubeConfig you loaded yourself; takes the place of `kubeconfig` and `context`. */
  kubeConfig?: KubeConfig;
  /** Bounds every API call, including a watch's connect. Milliseconds. Default 5000. */
  requestTimeoutMs?: number;
  /** Restart the pod watch when it has sent nothing, not even a bookmark, this long. Milliseconds. Default 90000. */
  watchSilenceTimeoutMs?: number;
  /** Server-side lifetime of one watch request; it is then resumed. Seconds. Default 300. */
  watchTimeoutSeconds?: number;
  /**
   * With a registry, only the holder of the election `pod-runner-<name>` creates,
   * cancels, times out and cleans up pods, and stamps its fencing token on the pods it
   * creates; a runner that takes over re-attaches to the pods it finds. Without one,
   * the runner acts alone.
   */
  registry?: Registry;
  /**
   * Called with every status change, including those a runner finds while it
   * re-attaches at start (a task that ended while no runner was up is reported
   * here before createPodRunner resolves). A change on the way (`queued`,
   * `pending`, `running`, `unknown`) is told once and not awaited. A terminal
   * status is stored in the task ledger first, then delivered until
   * acknowledged: the callback returns (anything but a promise), or its promise
   * resolves; a throw or a rejection delivers it again after 1 s, doubling up to
   * 60 s, and across runner restarts. Delivery is at least once: a runner killed
   * after the acknowledgement and before it is stored delivers the same status
   * (same `taskId` and `attempt`) again, so make the callback idempotent on those.
   */
  onStatus?: (status: TaskStatus) => unknown;
  /** The task records: see {@link RecordOptions}. */
  records?: RecordOptions;
  /** @deprecated See {@link LedgerOptions}. */
  ledger?: LedgerOptions;
  /** Shown in User-Agent and as the election candidate. Default `<hostname>-<pid>`. */
  identity?: string;
  /** pino-shaped logger. Default silent. */
  logger?: Logger;
  /**
   * Time for the runner's timers: the pending and run timeouts, the pause after a
   * quota refusal, a kept failed pod's delete, and the `submittedAt`/`finishedAt`
   * stamps (`wallNow()`). Deadlines from a pod's timestamps are wall-clock
   * instants, turned into a delay on this clock once, when their timer is armed.
   * For tests (core's `ManualClock`); the API client, the watch and log streams
   * keep real time. Default core's `systemClock`.
   */
  clock?: Clock;
}

export const DEFAULT_RUNNER_NAME = 'rollcall';
export const DEFAULT_TOTAL_CAPACITY = 50;

/** A runner's name: a DNS label short enough to prefix its pods' names. */
const RUNNER_NAME = /^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$/;

/**
 * Every key of {@link PodRunnerOptions}, its rule and its default, checked by
 * core's configuration resolver: unknown keys, wrong types and broken rules are
 * INVALID_CONFIG naming the key. `timeouts.unknown` has no default here: it is
 * applied when read (`DEFAULT_UNKNOWN_TIMEOUT_MS`), so the timeouts a task
 * carries stay what a runner without that bound wrote.
 */
export const POD_RUNNER_OPTIONS: ResolveSpec['schema'] = Object.freeze({
  templates: { type: 'code', required: true, doc: 'Ordered template rules.', check: (v) => (Array.isArray(v) ? undefined : 'a list of template rules') },
  namespace: { type: 'string', doc: 'Namespace of the pods.' },
  name: { type: 'string', default: DEFAULT_RUNNER_NAME, doc: "The runner's name.", check: (v) => (RUNNER_NAME.test(v) ? undefined : 'a DNS label of at most 30 characters') },
  'capacity.total': { type: 'integer', default: DEFAULT_TOTAL_CAPACITY, min: 1, doc: 'Pods pending or running at once, all task types.' },
  'capacity.perType': { type: 'map', default: {}, min: 1, doc: 'Pods pending or running at once, per task type.' },
  'timeouts.unschedulable': { type: 'number', above: 0, default: DEFAULT_TIMEOUTS.unschedulable, doc: 'ms' },
  'timeouts.imagePull': { type: 'number', above: 0, default: DEFAULT_TIMEOUTS.imagePull, doc: 'ms' },
  'timeouts.start': { type: 'number', above: 0, default: DEFAULT_TIMEOUTS.start, doc: 'ms' },
  'timeouts.run': { type: 'number', above: 0, doc: 'ms' },
  'timeouts.gated': { type: 'number', above: 0, doc: 'ms' },
  'timeouts.queue': { type: 'number', above: 0, doc: 'ms' },
  'timeouts.unknown': { type: 'number', above: 0, doc: 'ms' },
  keepFailedPodsMs: { type: 'integer', default: 0, min: 0, doc: 'ms' },
  requeueDelayMs: { type: 'integer', default: 1000, min: 1, doc: 'ms' },
  'logs.dir': { type: 'string', doc: 'The directory sink.' },
  'logs.sink': { type: 'code', doc: 'A shared log sink.' },
  'logs.maxBytesPerTask': { type: 'integer', default: DEFAULT_MAX_LOG_BYTES, min: 1, doc: 'bytes' },
  kubeconfig: { type: 'string', doc: 'Path of a kubeconfig file.' },
  context: { type: 'string', doc: 'Kubeconfig context.' },
  kubeConfig: { type: 'code', doc: 'A KubeConfig loaded by the caller.' },
  requestTimeoutMs: { type: 'integer', default: DEFAULT_REQUEST_TIMEOUT_MS, min: 1, doc: 'ms' },
  watchSilenceTimeoutMs: { type: 'integer', default: 90_000, min: 1, doc: 'ms' },
  watchTimeoutSeconds: { type: 'integer', default: 300, min: 1, doc: 's' },
  registry: { type: 'code', doc: 'The registry whose election the runner campaigns in.' },
  onStatus: { type: 'code', doc: 'Status callback.', check: (v) => (typeof v === 'function' ? undefined : 'a function') },
  'records.retainDoneMs': { type: 'integer', min: 1, doc: 'ms' },
  'ledger.retainDoneMs': { type: 'integer', min: 1, doc: 'ms (deprecated: records.retainDoneMs)' },
  'ledger.maxDone': { type: 'integer', min: 1, doc: 'ignored (deprecated)' },
  identity: { type: 'string', doc: 'User-Agent and election candidate.' },
  logger: { type: 'code', default: silentLogger, doc: 'pino-shaped logger.' },
  clock: { type: 'code', default: systemClock, doc: 'Time for the timers.' },
});

/** {@link PodRunnerOptions} with every default applied, as the runner runs with them. @internal */
export type ResolvedPodRunnerOptions = Omit<PodRunnerOptions, 'name' | 'capacity' | 'timeouts' | 'keepFailedPodsMs' | 'requeueDelayMs' | 'logs' | 'requestTimeoutMs' | 'watchSilenceTimeoutMs' | 'watchTimeoutSeconds' | 'records' | 'ledger' | 'logger' | 'clock'> & {
  readonly name: string;
  readonly capacity: { readonly total: number; readonly perType: Readonly<Record<string, number>> };
  readonly timeouts: Readonly<TaskTimeouts>;
  readonly keepFailedPodsMs: number;
  readonly requeueDelayMs: number;
  readonly logs: (TaskLogOptions & { readonly maxBytesPerTask: number }) | false;
  readonly requestTimeoutMs: number;
  readonly watchSilenceTimeoutMs: number;
  readonly watchTimeoutSeconds: number;
  readonly records: Readonly<Required<RecordOptions>>;
  readonly logger: Logger;
  readonly clock: Clock;
};

/** Validates a runner's options by {@link POD_RUNNER_OPTIONS} and applies its defaults. INVALID_CONFIG naming the key and the rule. @internal */
export function resolvePodRunnerOptions(options: PodRunnerOptions): ResolvedPodRunnerOptions {
  // `logs: false` turns capture off; it is not a section the schema walks
  const { logs, ...rest } = options;
  const given = logs === false ? rest : { ...rest, logs };
  const { values } = resolveOptions<ResolvedPodRunnerOptions & { ledger?: LedgerOptions }>({ prefix: '', schema: POD_RUNNER_OPTIONS, backend: BACKEND }, [{ layer: 'code', values: given }]);
  const { ledger, ...resolved } = values;
  if (ledger?.maxDone !== undefined) resolved.logger.warn({ maxDone: ledger.maxDone }, '[rollcall] [pod-runner] ledger.maxDone is ignored: task records are kept by age alone (records.retainDoneMs)');
  if (ledger?.retainDoneMs !== undefined) resolved.logger.warn({ retainDoneMs: ledger.retainDoneMs }, '[rollcall] [pod-runner] ledger.retainDoneMs is deprecated: give records.retainDoneMs');
  const records = { retainDoneMs: values.records?.retainDoneMs ?? ledger?.retainDoneMs ?? DEFAULT_RETAIN_DONE_MS };
  return { ...resolved, records, ...(logs === false ? { logs: false } : {}) };
}
