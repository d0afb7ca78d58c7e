import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, silentLogger, type Clock, type Logger, type Registry } from '../src/index.js';
import { ManualClock, MemoryBackend, MemoryStore } from '../src/testing.js';
import { until } from './harness.js';

/** The default renew deadline of elections and locks: every term here is written at 0, so it is valid before this. */
const RENEW_DEADLINE_MS = 10_000;
/** The default retry period: the delay tryOnce() gives the first renew. */
const RETRY_PERIOD_MS = 2_000;

/**
 * Announcements are made only while the term is valid, however a pause lands
 * around them: a pause after the validity read delays the news (work reads
 * `held`/`isLeader`), it never makes a stale term announced as fresh.
 */
describe('a pause just before an announcement', () => {
  const opened: Registry[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.close()));
  });

  async function open(clock: ManualClock, logger: Logger = silentLogger, runtimeClock: Clock = clock): Promise<Registry> {
    const store = new MemoryStore({ backend: new MemoryBackend(), cluster: 'test' });
    const registry = await createRegistry({ type: 'memory', identity: 'a' }, { store, clock: runtimeClock, logger });
    opened.push(registry);
    return registry;
  }

  /** A logger whose `[rollcall] acquired` line takes a pause past the renew deadline, once: the line that once sat between the validity read and the announcement. */
  function pausingLogger(clock: ManualClock): Logger {
    let paused = false;
    return {
      ...silentLogger,
      info: (fields: unknown, message?: string) => {
        if (paused || message !== '[rollcall] acquired') return;
        paused = true;
        clock.jump(RENEW_DEADLINE_MS);
      },
    } as Logger;
  }

  it('elected is announced only while the leader is valid; the pause after it ends the term', async () => {
    const clock = new ManualClock();
    const registry = await open(clock, pausingLogger(clock));
    const events: string[] = [];
    const leadership = registry.campaign('scheduler');
    leadership.on('elected', (e) => events.push(`elected ${e.fencingToken} isLeader=${leadership.isLeader} @${clock.now()}`));
    leadership.on('lost', (e) => events.push(`lost ${e.fencingToken} ${e.reason}`));
    await until(() => events.length > 0); // not advance(): it would set the clock back to its own target after the pause
    expect(events[0]).toBe('elected 1 isLeader=true @0');
    expect(leadership.isLeader).toBe(false); // the pause came after the news: the flag says so at once
    await clock.advance(0);
    expect(events.slice(0, 2)).toEqual(['elected 1 isLeader=true @0', 'lost 1 renew-deadline']);
  });

  it('lockAcquired is announced and lock() resolves only while the lock is valid', async () => {
    const clock = new ManualClock();
    const registry = await open(clock, pausingLogger(clock));
    const events: string[] = [];
    registry.on('lockAcquired', (e) => events.push(`lockAcquired ${e.fencingToken} @${clock.now()}`));
    registry.on('lockLost', (e) => events.push(`lockLost ${e.fencingToken} ${e.reason}`));
    const handle = await registry.lock('jobs');
    expect(events[0]).toBe('lockAcquired 1 @0');
    // Resolved before the pause; the handle read after it tells the truth.
    expect(handle.held).toBe(false);
    expect(handle.signal.aborted).toBe(true);
    await clock.advance(0);
    expect(events).toEqual(['lockAcquired 1 @0', 'lockLost 1 renew-deadline']);
  });

  it('tryLock() hands out no handle when a pause lands after its attempt judged the term', async () => {
    const clock = new ManualClock();
    let armed = false;
    // The pause lands as tryOnce() schedules the first renew, after it judged the term held.
    const pausing: Clock = {
      now: () => clock.now(),
      wallNow: () => clock.wallNow(),
      setTimeout: (fn, ms) => {
        if (armed && ms === RETRY_PERIOD_MS) {
          armed = false;
          clock.jump(RENEW_DEADLINE_MS);
        }
        return clock.setTimeout(fn, ms);
      },
    };
    const registry = await open(clock, silentLogger, pausing);
    const events: string[] = [];
    registry.on('lockAcquired', (e) => events.push(`lockAcquired ${e.fencingToken}`));
    armed = true;
    const handle = await registry.tryLock('jobs');
    expect(armed).toBe(false);
    expect(handle).toBeUndefined();
    expect(events).toEqual([]);
    // The term was given back: the next tryLock takes a new one at once.
    const next = await registry.tryLock('jobs');
    expect(next?.fencingToken).toBe(2);
    expect(next?.held).toBe(true);
  });
  it('whenElected() on a leader resolves with the token it read, though a pause follows the read', async () => {
    const clock = new ManualClock();
    let armed = false;
    // The pause lands right after a clock read: between two reads, if the leader reads twice.
    const pausing: Clock = {
      now: () => {
        const now = clock.now();
        if (armed) {
          armed = false;
          clock.jump(RENEW_DEADLINE_MS);
        }
        return now;
      },
      wallNow: () => clock.wallNow(),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    };
    const registry = await open(clock, silentLogger, pausing);
    const leadership = registry.campaign('scheduler');
    await clock.advance(0);
    expect(leadership.isLeader).toBe(true);
    armed = true;
    const elected = leadership.whenElected();
    expect(armed).toBe(false);
    await expect(elected).resolves.toBe(1);
    expect(leadership.isLeader).toBe(false);
  });
});
