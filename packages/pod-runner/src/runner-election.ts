import { type Clock, hasCode, type Leadership, type Logger, type Registry } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import type { ApiClient } from '@rollcall/kube-client';
import { type FencedTerm, type ProbeTiming, TermFence } from './term-fence.js';

/** A term as the election holds it: opened once elected and fenced, closed on loss. */
export interface ElectedTerm {
  close(): Promise<void>;
}

/** A term the fence entered, and the check its writes make first. */
export interface EnteredTerm extends FencedTerm {
  /** Whether this process still leads this term now (the elector's renew deadline, judged at the moment of asking). */
  leads(): boolean;
  /** A later term's write was seen on the runner's objects: this term is over and is closed (without a registry nothing else would tell it). */
  superseded(later: number): void;
}

/** What a {@link RunnerElection} takes. */
export interface RunnerElectionOptions<T extends ElectedTerm> {
  client: ApiClient;
  /** The namespace of the runner's pods, records and term Lease. */
  namespace: string;
  runner: string;
  /** Campaigns in `pod-runner-<runner>`; without one, each start takes the term Lease's term + 1 and leads until closed. */
  registry?: Registry;
  /** The election candidate. Default the registry's identity. */
  identity?: string;
  clock: Clock;
  logger: Logger;
  /** The fence's probe timing (term-fence.ts). */
  probe?: ProbeTiming;
  /** Opens (and starts) the term once the term Lease holds it and the API server shows it; closed when the term is lost. A rejection must leave nothing open: the entry is tried again. */
  open(term: EnteredTerm): Promise<T>;
  /** The fence's mode, once per term. */
  fenced?(term: FencedTerm): void;
}

/** The first pause before entering a term again after the fence or the term's start failed; doubles up to 30 s. Milliseconds. */
const ENTER_RETRY_MS = 500;

/**
 * Who leads the pod runner, and the only place that knows: with a registry,
 * the election `pod-runner-<name>`; elected, the term Lease is raised to the
 * election's fencing token and probed (term-fence.ts), then the term is
 * opened; on loss it is closed. Without a registry, start raises the Lease to
 * its term + 1 by compare-and-set, so an older process still alive is fenced
 * by the server (its writes carry the older term).
 */
export class RunnerElection<T extends ElectedTerm> {
  private readonly fence: TermFence;
  private leadership: Leadership | undefined;
  private current: T | undefined;
  /** Counts elections and losses: an entry begun under an older generation is abandoned. */
  private generation = 0;
  private entering: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: RunnerElectionOptions<T>) {
    this.fence = new TermFence({ client: options.client, namespace: options.namespace, runner: options.runner, clock: options.clock, logger: options.logger, probe: options.probe });
  }

  /** The term now, while it is open; undefined otherwise. */
  get term(): T | undefined {
    return this.current;
  }

  /**
   * Whether this process leads now: with a registry, the elector holds the
   * election at this moment (a process resumed past its renew deadline does
   * not, before it hears `lost`; its term may still be entering); without
   * one, its term is open.
   */
  get leads(): boolean {
    if (!this.options.registry) return this.current !== undefined;
    return this.leadership?.isLeader === true;
  }

  /**
   * Without a registry: resolves once this process's term is open, rejects
   * with the fence's error (PERMISSION_DENIED, UNAVAILABLE). With one:
   * creates the term Lease if absent, then campaigns (resolves at once; the
   * term opens when elected).
   */
  async start(): Promise<void> {
    const { registry } = this.options;
    if (!registry) return this.enter(undefined, this.generation);
    await this.fence.ensure();
    const leadership = registry.campaign(`pod-runner-${this.options.runner}`, this.options.identity);
    this.leadership = leadership;
    leadership.on('elected', ({ fencingToken }) => {
      if (this.closed) return;
      this.options.logger.info({ fencingToken }, '[rollcall] [pod-runner] leading the runner election; entering the term');
      const generation = ++this.generation;
      this.entering = this.after(() => this.enter(fencingToken, generation));
    });
    leadership.on('lost', ({ reason }) => {
      this.options.logger.warn({ reason }, '[rollcall] [pod-runner] lost the runner election; the term is closed');
      this.generation += 1;
      this.entering = this.after(() => this.leave());
    });
  }

  /** Resolves once the entry or exit under way has ended. */
  async settled(): Promise<void> {
    while (this.entering) {
      const now = this.entering;
      await now;
      if (this.entering === now) this.entering = undefined;
    }
  }

  /** Stops campaigning (a leader resigns) and closes the term. */
  async close(): Promise<void> {
    this.closed = true;
    this.generation += 1;
    await this.leadership?.resign();
    await this.settled();
    await this.leave();
  }

  /** Runs `step` after the one under way: entries and exits never overlap. */
  private after(step: () => Promise<void>): Promise<void> {
    return (this.entering ?? Promise.resolve()).then(step, step);
  }

  private async leave(): Promise<void> {
    const term = this.current;
    this.current = undefined;
    await term?.close();
  }

  /** Raises and probes the term, then opens it; tried again after a failure while this generation lasts. */
  private async enter(token: number | undefined, generation: number): Promise<void> {
    const { clock, logger } = this.options;
    const backoff = new Backoff({ clock, initialMs: ENTER_RETRY_MS, maxMs: 30_000 });
    const live = () => !this.closed && this.generation === generation;
    while (live()) {
      try {
        const fenced = await this.fence.enter(token);
        if (!live()) return;
        this.options.fenced?.(fenced);
        let later: number | undefined;
        const superseded = (seen: number) => {
          if (later !== undefined) return;
          later = seen;
          logger.warn({ term: fenced.term, later: seen }, '[rollcall] [pod-runner] a later term wrote this runner\'s objects; this term is over');
          if (!live()) return;
          this.generation += 1;
          this.entering = this.after(() => this.leave());
        };
        const term = await this.options.open({ ...fenced, leads: () => live() && later === undefined && this.leading(token), superseded });
        if (!live()) return void (await term.close());
        this.current = term;
        return;
      } catch (err) {
        // the Lease already holds a later term: another process leads; wait for the next election
        if (hasCode(err, 'LEASE_LOST')) return logger.warn({ err, token }, '[rollcall] [pod-runner] the term Lease is past this election\'s term; not leading');
        // without a registry this is the runner's start: it fails (PERMISSION_DENIED, UNAVAILABLE) as a whole
        if (!this.options.registry) throw err;
        const retryInMs = backoff.next();
        logger.warn({ err, token, retryInMs }, '[rollcall] [pod-runner] could not enter the term; trying again');
        await new Promise<void>((resolve) => clock.setTimeout(resolve, retryInMs));
      }
    }
  }

  /** The elector's own check, at the moment of asking: a process resumed past its renew deadline has not heard `lost` yet. */
  private leading(token: number | undefined): boolean {
    if (!this.options.registry) return true;
    return this.leadership?.isLeader === true && this.leadership.fencingToken === token;
  }
}
