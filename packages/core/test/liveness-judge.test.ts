import { describe, expect, it } from 'vitest';
import { judgeExpiry, type Confirmation } from '../src/expiry.js';
import { LivenessJudge } from '../src/liveness-judge.js';
import { silentLogger } from '../src/logger.js';
import { ManualClock } from '../src/manual-clock.js';
import { seeded } from './harness.js';

const LEASE = 1000;
const RETRY = 300;


type Backend = 'ok' | 'renewed' | 'down';

/**
 * One record as a reader sees it, judged by a LivenessJudge on the manual
 * clock, beside the reference: the one rule written out plainly — a record
 * runs out once this reader has seen it unchanged, and its watch live, for a
 * whole lease.
 */
class Model {
  readonly clock = new ManualClock();
  readonly judge = new LivenessJudge({ clock: this.clock, logger: silentLogger, retryMs: RETRY });
  version = 0;
  observedAt = 0;
  live = true;
  liveSince = 0;
  backend: Backend = 'ok';
  /** Since when the backend has answered `confirmed`. */
  okSince = 0;
  /** The versions the judge reported expired, and when. */
  readonly expired: { version: number; at: number }[] = [];
  readonly log: string[] = [];
  /** What the reference said at each expiry: it must have run out. */
  readonly violations: string[] = [];
  confirms = 0;

  constructor() {
    this.track();
  }

  /** The reference: when the current version runs out by the rule. */
  due(): number {
    return Math.max(this.observedAt, this.liveSince) + LEASE;
  }

  track(): void {
    const version = this.version;
    this.judge.track('k', {
      expiry: () => judgeExpiry(LEASE, [this.observedAt], [{ live: this.live, liveSince: this.liveSince }], this.clock.now()),
      confirm: async (): Promise<Confirmation> => {
        this.confirms++;
        if (this.backend === 'down') throw new Error('unavailable');
        return this.backend === 'ok' ? 'confirmed' : 'changed';
      },
      expired: () => {
        const at = this.clock.now();
        if (!(this.live && version === this.version && at >= this.due())) this.violations.push(`v${version} expired at ${at}: live ${this.live}, current v${this.version}, due ${this.due()}`);
        this.expired.push({ version, at });
        this.judge.forget('k');
      },
    });
  }

  async step(random: () => number): Promise<void> {
    const r = random();
    if (r < 0.2 && this.live) {
      this.version++;
      this.observedAt = this.clock.now();
      this.log.push(`change v${this.version} at ${this.clock.now()}`);
      this.track();
    } else if (r < 0.3 && this.live) {
      this.live = false;
      this.log.push(`blind at ${this.clock.now()}`);
    } else if (r < 0.45 && !this.live) {
      this.live = true;
      this.liveSince = this.clock.now();
      this.log.push(`live at ${this.clock.now()}`);
      this.judge.rearm();
    } else if (r < 0.55) {
      const next = (['ok', 'renewed', 'down'] as const)[Math.floor(random() * 3)]!;
      if (next === 'ok' && this.backend !== 'ok') this.okSince = this.clock.now();
      this.backend = next;
      this.log.push(`backend ${next} at ${this.clock.now()}`);
    } else {
      const ms = Math.floor(random() * 1500);
      await this.clock.advance(ms);
      this.log.push(`advance ${ms} to ${this.clock.now()}`);
    }
  }

  /** Promptness: live and unchanged past its due, with the backend confirming, it must have been reported by now. */
  overdue(): string | undefined {
    if (!this.live || this.backend !== 'ok' || this.expired.some((e) => e.version === this.version)) return undefined;
    const due = this.due();
    const bound = this.okSince <= due ? due : this.okSince + RETRY;
    return this.clock.now() >= bound ? `v${this.version} not expired at ${this.clock.now()} (due ${due}, backend ok since ${this.okSince})` : undefined;
  }
}

describe('the liveness judge (arm → confirm → retry) against the one rule', () => {
  it('over random sequences of record changes, blind spells, backend answers and clock advances: never reports an expiry the rule does not, and reports each one as soon as the backend confirms it', async () => {
    let expiries = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const random = seeded(seed);
      const model = new Model();
      for (let i = 0; i < 60; i++) {
        await model.step(random);
        const overdue = model.overdue();
        expect(model.violations, `seed ${seed}: ${model.log.join('; ')}`).toEqual([]);
        expect(overdue, `seed ${seed}: ${model.log.join('; ')}`).toBeUndefined();
      }
      expiries += model.expired.length;
      // Each version is reported at most once.
      expect(new Set(model.expired.map((e) => e.version)).size).toBe(model.expired.length);
      model.judge.close();
    }
    // The sequences exercise the rule: many expiries, not a vacuous pass.
    expect(expiries).toBeGreaterThan(50);
  });

  it('a record seen unchanged for a lease is confirmed once, at its due time, and reported', async () => {
    const model = new Model();
    await model.clock.advance(LEASE - 1);
    expect(model.expired).toEqual([]);
    await model.clock.advance(1);
    expect(model.expired).toEqual([{ version: 0, at: LEASE }]);
    expect(model.confirms).toBe(1);
  });

  it('blind time does not count: a watch back at t gives a whole lease from t', async () => {
    const model = new Model();
    model.live = false;
    await model.clock.advance(5 * LEASE);
    expect(model.confirms).toBe(0);
    model.live = true;
    model.liveSince = model.clock.now();
    model.judge.rearm();
    await model.clock.advance(LEASE - 1);
    expect(model.expired).toEqual([]);
    await model.clock.advance(1);
    expect(model.expired).toEqual([{ version: 0, at: 6 * LEASE }]);
  });

  it('a backend that cannot say, or says changed, is asked again a retry delay later', async () => {
    const model = new Model();
    model.backend = 'down';
    await model.clock.advance(LEASE);
    expect(model.confirms).toBe(1);
    model.backend = 'renewed';
    await model.clock.advance(RETRY);
    expect(model.confirms).toBe(2);
    expect(model.expired).toEqual([]);
    model.backend = 'ok';
    await model.clock.advance(RETRY);
    expect(model.confirms).toBe(3);
    expect(model.expired).toEqual([{ version: 0, at: LEASE + 2 * RETRY }]);
  });

  it('tracking the same judged thing while it is being confirmed starts no second confirmation; a new one replaces it and the old answer is ignored', async () => {
    const clock = new ManualClock();
    const judge = new LivenessJudge({ clock, logger: silentLogger, retryMs: RETRY });
    let release!: (c: Confirmation) => void;
    let confirms = 0;
    const reported: string[] = [];
    const judged = {
      expiry: () => judgeExpiry(LEASE, [0], [{ live: true, liveSince: 0 }], clock.now()),
      confirm: () => {
        confirms++;
        return new Promise<Confirmation>((resolve) => (release = resolve));
      },
      expired: () => reported.push('old'),
    };
    judge.track('k', judged);
    await clock.advance(LEASE);
    expect(judge.confirming('k')).toBe(true);
    judge.track('k', judged);
    await clock.advance(LEASE);
    expect(confirms).toBe(1);
    judge.track('k', { ...judged, expiry: () => judgeExpiry(LEASE, [clock.now()], [{ live: true, liveSince: 0 }], clock.now()), expired: () => reported.push('new') });
    release('confirmed');
    await clock.advance(0);
    expect(reported).toEqual([]);
    expect(judge.confirming('k')).toBe(false);
    judge.close();
  });
});
