import { hasCode, LeaseLostError, silentLogger, UnavailableError, type Clock, type Logger } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import { BACKEND, type ApiClient } from '@rollcall/kube-client';
import { STALE_TERM_MESSAGE, TERM_LEASE_LABEL, termLeaseName } from './fence-policy.js';
import { TASK_RECORD_LABEL, TASK_STATE_LABEL, WRITE_TERM_ANNOTATION } from './task-record.js';

/**
 * Where a term's writes are fenced: by the API server (the fencing policy
 * refuses a stale term), or only by the runner's own gate, its preconditions
 * and its deterministic names (no policy bound in the namespace).
 */
export type FenceMode = 'server' | 'client';

/** What one dry run of the probe record told: let through, refused by the fence, or refused for want of any term Lease in the server's cache. */
export type ProbeAnswer = 'accepted' | 'refused' | 'unseen';

/** What the API server says when its policy finds no param: for the probe, "the server has not seen the Lease yet". */
export const UNSEEN = ['no params found', 'not yet synced to use for admission'];

/** Largest term `spec.leaseTransitions` (an int32) holds. */
export const MAX_TERM = 2 ** 31 - 1;

/** How the probe waits for the API server to see a new term. Every field has a default. */
export interface ProbeTiming {
  /** First wait between dry runs. Milliseconds. Default 50. */
  initialMs?: number;
  /** Longest wait between dry runs. Milliseconds. Default 1000. */
  maxMs?: number;
  /** Gives up (UNAVAILABLE) when the server has not shown the term by then. Milliseconds from the first dry run. Default 30000. */
  timeoutMs?: number;
  /** The backoff's randomness (tests make it exact). Default `Math.random`. */
  random?: () => number;
}

/** The two dry runs {@link probeFence} repeats: one stamped with no term at all, one stamped with the new term. */
export interface FenceProbes {
  /** A fenced write stamped with no term: refused exactly when a fencing policy is bound here. */
  control(): Promise<ProbeAnswer>;
  /** A fenced write stamped with the new term: accepted exactly when the server's Lease cache holds it (or no policy). */
  term(): Promise<ProbeAnswer>;
  /** Called after each refused term probe: throws when the term is no longer the Lease's (a later term took it). */
  stillCurrent?(): Promise<void>;
}

/**
 * The probe loop, on `clock`: the control dry run until it is answered for
 * certain (accepted: `client`, nothing to wait for), then the term's dry run
 * until the server accepts it (`server`), each repeat after a core Backoff
 * delay; the last at `timeoutMs`, after which it rejects UNAVAILABLE.
 *
 * Why not the plan's "stamp term − 1, repeat until refused": a refused stale
 * stamp does not prove the cache holds the new term when the Lease moved twice
 * (3 → 6 → 7: a cache still at 3 refuses 6), and an accepted one cannot tell
 * "no policy" from "not yet seen". Acceptance of the term itself, after a
 * refused control, proves both.
 */
export async function probeFence(probes: FenceProbes, clock: Clock, timing: ProbeTiming = {}, what = 'the term'): Promise<FenceMode> {
  const backoff = new Backoff({ clock, initialMs: timing.initialMs ?? 50, maxMs: timing.maxMs ?? 1000, jitter: 0.2, ...(timing.random ? { random: timing.random } : {}) });
  const deadline = clock.now() + (timing.timeoutMs ?? 30_000);
  // The last dry run is at the deadline, not a backoff delay past it.
  const wait = () => {
    const left = deadline - clock.now();
    if (left <= 0) throw new UnavailableError(`the API server did not show ${what} to its fencing policy within ${timing.timeoutMs ?? 30_000} ms`, { backend: BACKEND });
    return new Promise<void>((resolve) => clock.setTimeout(resolve, Math.min(backoff.next(), left)));
  };
  for (;;) {
    const answer = await probes.control();
    if (answer === 'accepted') return 'client';
    if (answer === 'refused') break;
    await wait();
  }
  backoff.reset();
  for (;;) {
    if ((await probes.term()) === 'accepted') return 'server';
    await probes.stillCurrent?.();
    await wait();
  }
}

/** A term Lease as read: its term and the resourceVersion a compare-and-set needs. */
export interface TermLeaseState {
  term: number;
  resourceVersion: string;
}

/** A term the fence has written and probed. */
export interface FencedTerm {
  term: number;
  mode: FenceMode;
}

export interface TermFenceOptions {
  /** The runner's API client (its account's requests: the policy judges them). */
  client: ApiClient;
  /** The runner's (its pods' and records') namespace. */
  namespace: string;
  /** The runner's name. */
  runner: string;
  /** Where the probe waits. Default the client's clock. */
  clock?: Clock;
  probe?: ProbeTiming;
  /**
   * Name of the probe record (a dry run: never stored). Default
   * `<runner>-task-fence-probe`; it must pass the namespace's other policies.
   */
  probeName?: string;
  /** Default silent. */
  logger?: Logger;
}

interface LeaseObject {
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string>; [field: string]: unknown };
  spec?: { leaseTransitions?: number; [field: string]: unknown };
}

/**
 * A runner's term Lease `pod-runner-<name>-term` (coordination/v1, labelled
 * `rollcall.dev/runner-term=<name>`): `spec.leaseTransitions` is the term whose
 * writes the fencing policy lets through. {@link enter} raises it to a new
 * term by compare-and-set, then probes until the API server shows that term to
 * its policy; only then may the term write.
 */
export class TermFence {
  readonly leaseName: string;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(private readonly options: TermFenceOptions) {
    this.leaseName = termLeaseName(options.runner);
    this.clock = options.clock ?? options.client.clock;
    this.logger = options.logger ?? silentLogger;
  }

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.options.namespace}/leases`;
  }

  private context(verb: string) {
    return { verb, resource: 'leases', namespace: this.options.namespace, name: this.leaseName };
  }

  private async readObject(): Promise<LeaseObject | undefined> {
    try {
      return await this.options.client.request<LeaseObject>({ method: 'GET', path: `${this.path}/${this.leaseName}`, context: this.context('get') });
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return undefined;
      throw err;
    }
  }

  /** The Lease's term now, or undefined when it does not exist. */
  async read(): Promise<TermLeaseState | undefined> {
    const lease = await this.readObject();
    return lease && { term: lease.spec?.leaseTransitions ?? 0, resourceVersion: lease.metadata.resourceVersion };
  }

  /** The Lease, created at term 0 when absent (every runner does this at start). */
  private async ensureObject(): Promise<LeaseObject> {
    for (;;) {
      const lease = await this.readObject();
      if (lease) return lease;
      try {
        const body = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.leaseName, labels: { [TERM_LEASE_LABEL]: this.options.runner } }, spec: { leaseTransitions: 0 } };
        return await this.options.client.request<LeaseObject>({ method: 'POST', path: this.path, body, context: this.context('create') });
      } catch (err) {
        if (!hasCode(err, 'ALREADY_EXISTS')) throw err;
      }
    }
  }

  /** Creates the Lease at term 0 if absent; its state either way. */
  async ensure(): Promise<TermLeaseState> {
    const lease = await this.ensureObject();
    return { term: lease.spec?.leaseTransitions ?? 0, resourceVersion: lease.metadata.resourceVersion };
  }

  /**
   * Raises the term by compare-and-set (a PUT with the resourceVersion read):
   * to `token`, the election's fencing token, or without a registry to the
   * Lease's term + 1, retried on a conflict (a process started at the same
   * time takes the next one, and deposes this one). LEASE_LOST when the Lease
   * already holds a term above `token`.
   */
  async raise(token?: number): Promise<number> {
    if (token !== undefined && !(Number.isSafeInteger(token) && token >= 1 && token <= MAX_TERM)) throw new UnavailableError(`fencing token ${token} does not fit a term Lease (1 to ${MAX_TERM})`, { backend: BACKEND });
    for (;;) {
      const lease = await this.ensureObject();
      const current = lease.spec?.leaseTransitions ?? 0;
      if (token !== undefined && current > token) throw new LeaseLostError('taken', `term ${token} of ${this.leaseName} is over: the Lease already holds term ${current}`, { backend: BACKEND });
      if (token !== undefined && current === token) return token;
      const next = token ?? current + 1;
      if (next > MAX_TERM) throw new UnavailableError(`${this.leaseName} is at term ${current}, the last an int32 holds`, { backend: BACKEND });
      try {
        await this.options.client.request({ method: 'PUT', path: `${this.path}/${this.leaseName}`, body: { ...lease, spec: { ...lease.spec, leaseTransitions: next } }, context: this.context('update') });
        return next;
      } catch (err) {
        if (!hasCode(err, 'CONFLICT', 'NOT_FOUND')) throw err;
      }
    }
  }

  /** One server-side dry run of a fenced probe record stamped with `term` (none: unstamped). */
  async dryRun(term: number | undefined): Promise<ProbeAnswer> {
    const { runner, namespace } = this.options;
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: this.options.probeName ?? `${runner}-task-fence-probe`,
        // `finished`: a record state the fence judges (a queued one is a submit, unfenced).
        labels: { [TASK_RECORD_LABEL]: runner, [TASK_STATE_LABEL]: 'finished' },
        ...(term === undefined ? {} : { annotations: { [WRITE_TERM_ANNOTATION]: String(term) } }),
      },
      data: { probe: 'a dry run: never stored' },
    };
    try {
      await this.options.client.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, body, context: { verb: 'create (dry run)', resource: 'configmaps', namespace, name: body.metadata.name } });
      return 'accepted';
    } catch (err) {
      if (hasCode(err, 'PERMISSION_DENIED') && err.message.includes(STALE_TERM_MESSAGE)) return 'refused';
      // No term Lease in the policy's param cache (not there yet, or the cache not synced): a 422 of parameterNotFoundAction Deny.
      if (hasCode(err, 'PERMISSION_DENIED', 'INVALID_ARGUMENT') && UNSEEN.some((m) => err.message.includes(m))) return 'unseen';
      throw err;
    }
  }

  /** Waits until the API server's fencing policy holds `term` (`server`), or finds no policy (`client`, logged as a warning). */
  async probe(term: number): Promise<FenceMode> {
    const mode = await probeFence(
      {
        control: () => this.dryRun(undefined),
        term: () => this.dryRun(term),
        stillCurrent: async () => {
          const now = await this.read();
          if (now && now.term !== term) throw new LeaseLostError('taken', `term ${term} of ${this.leaseName} is over: the Lease holds term ${now.term}`, { backend: BACKEND });
        },
      },
      this.clock,
      this.options.probe,
      `term ${term} of ${this.leaseName}`,
    );
    if (mode === 'client') this.logger.warn({ lease: this.leaseName, term }, '[rollcall] [pod-runner] fencing not enforced by the server: no fencing policy judges this namespace; only the runner\'s own gate and preconditions fence a deposed term');
    return mode;
  }

  /** A new term: {@link raise}, then {@link probe}. The term may write once this resolves. */
  async enter(token?: number): Promise<FencedTerm> {
    const term = await this.raise(token);
    return { term, mode: await this.probe(term) };
  }
}

/** `metadata.annotations` with `rollcall.dev/write-term` set to `term`: what every fenced write carries. */
export function stampTerm(annotations: Record<string, string> | undefined, term: number): Record<string, string> {
  return { ...annotations, [WRITE_TERM_ANNOTATION]: String(term) };
}
