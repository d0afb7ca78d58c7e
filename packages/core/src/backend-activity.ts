import { ClosedError, ErrorCode, RegistryError } from './errors.js';
import type { Logger } from './logger.js';

/** A call a registry makes to its backend. `assertCanHold` is the permission check before a campaign or lock wait. */
export type BackendOperation = 'get' | 'create' | 'update' | 'delete' | 'list' | 'watch' | 'assertCanHold';

/**
 * What a registry does with its backend, as it happens: for metrics and
 * tracing, which the Registry API's state events do not show.
 */
export type BackendActivity =
  /**
   * A call answered, refused or timed out. `durationMs` is from the call to
   * its answer by the registry's clock (the request timeout when it timed
   * out); `code` is undefined on success, else the error's code (`CONFLICT`,
   * `UNAVAILABLE`, ...). A `watch` is reported when it is opened, with
   * `durationMs` 0: a stream has no answer time; its end is `watchEnded`.
   */
  | { type: 'request'; operation: BackendOperation; durationMs: number; code: ErrorCode | undefined }
  /** A watch delivered one event: a change (`put`, `delete`, `corrupt`) or a `progress` bookmark. */
  | { type: 'watchEvent'; event: 'put' | 'delete' | 'corrupt' | 'progress' }
  /** A watch broke. The registry watches again: it relists first when `code` is `REVISION_TOO_OLD`, otherwise it resumes from its revision. */
  | { type: 'watchEnded'; code: ErrorCode }
  /** The registry closed: nothing more comes; a listener lets go of it here. */
  | { type: 'closed' };

export type BackendActivityListener = (activity: BackendActivity) => void;

/**
 * Where a registry's store call path reports its activity; fans it out to the
 * listeners of `observeBackend`. A listener that throws is logged and
 * changes nothing.
 * @internal
 */
export class BackendActivityReporter {
  private readonly listeners = new Set<BackendActivityListener>();
  private closed = false;

  constructor(private readonly logger: Logger) {}

  add(listener: BackendActivityListener): () => void {
    // A listener added now would never hear `closed`: refused like every call on a closed registry.
    if (this.closed) throw new ClosedError('the registry is closed');
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A call answered; `error` is what it threw, when it did. */
  request(operation: BackendOperation, durationMs: number, failed: boolean, error?: unknown): void {
    if (this.listeners.size === 0) return;
    const code = !failed ? undefined : error instanceof RegistryError ? error.code : ErrorCode.INTERNAL;
    this.report({ type: 'request', operation, durationMs, code });
  }

  report(activity: BackendActivity): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(activity);
      } catch (err) {
        this.logger.error({ err, activity: activity.type }, '[rollcall] a backend activity listener threw');
      }
    }
  }

  /** Reports `closed` and lets every listener go. */
  close(): void {
    this.closed = true;
    this.report({ type: 'closed' });
    this.listeners.clear();
  }
}

/** Each registry's reporter, for `observeBackend`. Keyed by `object`: this file sits below the Registry and must not import it. */
const reporters = new WeakMap<object, BackendActivityReporter>();

/** @internal */
export function bindBackendActivity(registry: object, reporter: BackendActivityReporter): void {
  reporters.set(registry, reporter);
}

/** The reporter bound to `registry`, if `createRegistry()` made it. @internal */
export function boundBackendActivity(registry: object): BackendActivityReporter | undefined {
  return reporters.get(registry);
}
