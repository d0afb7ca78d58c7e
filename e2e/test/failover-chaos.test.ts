import { describe, expect, it } from 'vitest';
import { backendsUnderTest } from '../src/backends.js';
import { formatChaosFigures, runFailoverChaos } from '../src/failover-chaos.js';

// The short failover chaos: one round of every fault per backend (about 15–30 s each). `npm run chaos` is the long one.
describe('failover chaos', () => {
  // ZooKeeper too since the missed-mark gap closed: its one-shot watches may fold a crashed member's expiry mark into
  // the delete that follows, which a leader now fails over (only a withdraw it saw marked is skipped).
  for (const backend of backendsUnderTest()) {
    it(`${backend.name}: every ended incarnation failed over once, no write after its failover began, lost before removed`, async () => {
      const result = await runFailoverChaos({ backend: backend.name, rounds: 1 });
      console.log(`${formatChaosFigures(result.figures)}\n(logs and timeline: ${result.workDir})`);
      expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
      for (const kind of result.kinds) expect(result.figures.applied[kind], kind).toBeGreaterThan(0);
      // The run did work: both leader faults left a claimed failover for a successor to resume, and workers wrote.
      expect(result.figures.resumed).toBeGreaterThanOrEqual(2);
      expect(result.figures.failedOver).toBeGreaterThanOrEqual(result.kinds.includes('worker-cut') ? 5 : 4);
      expect(result.figures.work.accepted).toBeGreaterThan(0);
    }, 180_000);
  }
});
