import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const EXAMPLE = fileURLToPath(new URL('../examples/scheduler-failover.ts', import.meta.url));

describe('examples/scheduler-failover.ts, as docs/failover.md prints it', () => {
  it('runs with node from a checkout: each dead worker failed over once, a successor resumes the cut-off leader\'s failover, the late write refused', () => {
    const r = spawnSync(process.execPath, [EXAMPLE], { encoding: 'utf8', timeout: 60_000 });
    const out = r.stdout + r.stderr;
    expect(r.status, out).toBe(0);
    const verdicts = out.split('\n').filter((l) => l.includes('verdict: '));
    expect(verdicts, out).toHaveLength(5);
    for (const v of verdicts) expect(v, out).toContain('verdict: ok');
    // The story the verdict rests on, each step as printed.
    expect(out).toMatch(/worker-3 lost its incarnation #\d+ \(renew-deadline\) by its own clock/);
    expect(out).toMatch(/master-1 fails worker-3 #\d+ over \(expired\), token 1\n/);
    expect(out).toMatch(/master-1 is cut off in the middle of the failover/);
    expect(out).toMatch(/master-2 fails worker-2 #\d+ over \(expired, resumed: an earlier leader claimed it\), token 2/);
    expect(out.match(/failed over, acknowledged/g)).toHaveLength(2);
    // worker-2 learns it is lost before its failover begins.
    expect(out.indexOf('worker-2 lost its incarnation')).toBeLessThan(out.indexOf('fails worker-2'));
    expect(out).toMatch(/its write in flight from #\d+ lands now: refused/);
  }, 70_000);
});
