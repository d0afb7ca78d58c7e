import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRegistry, type MemberEvent, type Registry } from '@rollcall/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseRollingUnderTest } from '../src/backends.js';
import { oldRelease } from '../src/old-release.js';
import { runReleaseRolling } from '../src/release-rolling.js';

// A rolling update from the release before incarnations: 4 processes, 12 members, about 10–15 s per backend.
describe('rolling update from the release before incarnations', () => {
  for (const backend of releaseRollingUnderTest()) {
    const run = async () => {
      const result = await runReleaseRolling({ backend: backend.name });
      console.log(`${backend.name}: ${JSON.stringify(result.counts)} (old release ${result.old.builtMs ? `built in ${result.old.builtMs.toFixed(0)} ms` : 'cached'}; logs and timeline: ${result.workDir})`);
      expect(result.counts.restarts).toBe(5);
      expect(result.counts.writesAccepted).toBeGreaterThan(0);
      return result;
    };
    it(`${backend.name}: one leader, rising tokens, no member of a running process removed, each replaced incarnation failed over once`, async () => {
      const result = await run();
      expect(result.violations, `logs and timeline: ${result.workDir}`).toEqual([]);
      // The last step, on this release throughout: its 4 members failed over.
      expect(result.counts.failovers).toBeGreaterThanOrEqual(4);
    }, 180_000);
  }
});

/** The part of the old release's core this test drives. */
interface OldCore {
  createRegistry(config: unknown): Promise<{ announce(spec: { role: string; id: string; payload: unknown }): Promise<{ update(payload: unknown): Promise<void> }>; close(): Promise<void> }>;
}

describe('an old-release member seen by this release', () => {
  // On one sqlite file in this process: no processes, no timing. The old row has no created_revision; it reads as created at its acquireTime.
  let oldRegistry: Awaited<ReturnType<OldCore['createRegistry']>>;
  let registry: Registry;
  beforeAll(async () => {
    const old = (await import(pathToFileURL(join(oldRelease().dir, 'packages', 'core', 'dist', 'index.js')).href)) as OldCore;
    const config = { type: 'sqlite', cluster: 'release-compat', sqlite: { path: join(mkdtempSync(join(tmpdir(), 'rollcall-release-compat-')), 'registry.db') }, member: { heartbeatIntervalMs: 60_000, leaseDurationMs: 180_000 } };
    oldRegistry = await old.createRegistry({ ...config, identity: 'old' });
    registry = await createRegistry({ ...config, identity: 'new' });
  });
  afterAll(async () => {
    await registry?.close();
    await oldRegistry?.close();
  });

  it('sqlite: its updates (writes as a heartbeat is) are one incarnation, updated, never removed then added', async () => {
    const member = await oldRegistry.announce({ role: 'worker', id: 'w1', payload: { seq: 0 } });
    const events: MemberEvent[] = [];
    const waiters = new Set<() => void>();
    /** Resolves once the watch delivered payload `seq`; rejects after 10 s. */
    const seen = (seq: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!events.some((e) => (e.member.payload as { seq: number }).seq === seq)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`payload ${seq} not seen within 10 s`))), 10_000);
        waiters.add(check);
        check();
      });
    registry.watchMembers('worker', (e) => (events.push(e), waiters.forEach((wake) => wake())));
    await seen(0);
    for (const seq of [1, 2, 3]) {
      await member.update({ seq });
      await seen(seq);
    }
    // Before legacy creations: added 0, removed 0 (replaced), added 1, removed 1, added 2, … — four incarnations of one record.
    expect(events.map((e) => `${e.type} ${(e.member.payload as { seq: number }).seq}`)).toEqual(['added 0', 'updated 1', 'updated 2', 'updated 3']);
    expect([...new Set(events.map((e) => e.member.incarnation))]).toEqual([expect.stringMatching(/^legacy:/)]);
  });
});
