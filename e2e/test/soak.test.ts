import { describe, expect, it } from 'vitest';
import { backendsUnderTest } from '../src/backends.js';
import { formatFigures } from '../src/figures.js';
import { runSoak } from '../src/soak.js';

// The short soak: about 40 s per backend, at least one full round of faults. `npm run soak` is the long one.
describe('chaos soak', () => {
  for (const backend of backendsUnderTest()) {
    it(`${backend.name}: one leader, rising tokens, no stale write, no lost or phantom member event, no crash`, async () => {
      const result = await runSoak({ backend: backend.name, candidates: 3, durationMs: 40_000 });
      console.log(`${formatFigures(result.figures)}\n(logs and timeline: ${result.workDir})`);
      expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
      for (const kind of result.kinds) expect(result.figures.faults[kind]?.applied, kind).toBeGreaterThan(0);
      // The run did work: leaders came and went, and wrote.
      expect(result.figures.terms).toBeGreaterThanOrEqual(result.kinds.length);
      expect(result.figures.writes.accepted).toBeGreaterThan(0);
    }, 240_000);
  }
});
