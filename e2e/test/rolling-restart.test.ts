import { describe, expect, it } from 'vitest';
import { migrationsUnderTest } from '../src/backends.js';
import { runMigratingLeaderLosesTo, runRollingRestart } from '../src/rolling-restart.js';

// registry.type=migrate proven by rolling restarts: 5 processes, one at a time, from → migrate → to, about 40 s each.
describe('zero-downtime migration', () => {
  for (const from of migrationsUnderTest()) {
    it(`${from} → migrate(${from}→kubernetes) → kubernetes: one leader at every instant, rising tokens, every member in every view throughout`, async () => {
      const result = await runRollingRestart({ from, to: 'kubernetes' });
      console.log(`${from}→kubernetes: ${JSON.stringify(result.counts)} (logs and timeline: ${result.workDir})`);
      expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
      expect(result.counts.restarts).toBe(10);
      // The election and the lock were held in every phase: by from-only, migrating and to-only processes.
      for (const phase of ['from', 'migrate', 'to'] as const) {
        expect(result.counts.byPhase[phase].terms, `terms in phase ${phase}`).toBeGreaterThan(0);
        expect(result.counts.byPhase[phase].lockHolds, `lock holds in phase ${phase}`).toBeGreaterThan(0);
      }
      expect(result.counts.writesAccepted).toBeGreaterThan(0);
    }, 180_000);
  }

  it('a migrating leader whose connection to kubernetes (to) is cut steps down, though zookeeper (from) still answers', async () => {
    const result = await runMigratingLeaderLosesTo({ from: 'zookeeper', to: 'kubernetes' });
    console.log(`stepped down ${result.stepDownMs?.toFixed(0)} ms after the cut (logs and timeline: ${result.workDir})`);
    expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
    expect(result.stepDownMs).toBeDefined();
  }, 120_000);
});
