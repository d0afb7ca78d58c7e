import { describe, expect, it } from 'vitest';
import { formatFigures } from '../../src/figures.js';
import { runSoak } from '../../src/soak.js';

// The chaos soak with its candidates as pods on the real node, in pod liveness: each
// member alive while its pod is Ready, SIGKILLs and SIGSTOPs sent to the containers.
// Short, for CI: at least one full round of the pod faults.
describe('chaos soak in pods (registry.member.liveness=pod)', () => {
  it('one leader, rising tokens, no stale write, no lost or phantom member event, no member removed while its pod stayed Ready', async () => {
    const result = await runSoak({ backend: 'kubernetes', inPods: true, candidates: 3, durationMs: 60_000 });
    console.log(`${formatFigures(result.figures)}\n(logs and timeline: ${result.workDir})`);
    expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
    expect(result.kinds).toEqual(['resign', 'kill', 'pause', 'cut', 'withdraw']);
    for (const kind of result.kinds) expect(result.figures.faults[kind]?.applied, kind).toBeGreaterThan(0);
    expect(result.figures.terms).toBeGreaterThanOrEqual(result.kinds.length);
    expect(result.figures.writes.accepted).toBeGreaterThan(0);
    // Pod liveness did its work: a killed or paused candidate's pod went not Ready and its member expired.
    expect(result.figures.memberEvents.removed.expired ?? 0).toBeGreaterThan(0);
  }, 300_000);
});
