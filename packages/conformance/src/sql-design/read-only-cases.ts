import { createRegistry, type ConfigSource } from '@rollcall/core';
import { tableNames } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import { uniquePrefix, WAIT_MS, type SqlDesignHarness } from './harness.js';

/** The SQL design: a registry as a user that may only SELECT. */
export function readOnlyCases(h: SqlDesignHarness): void {
  const { name, options, open, registry, registries } = h;
  describe(`${name}: a read-only registry (registry.readOnly)`, () => {
    const title = 'as a user that may only SELECT: it opens, sees a member expire, and the revision counter never moves';
    if (!options.readOnlyUserConfig) {
      it.skip(`[skipped on ${name}: no read-only user] ${title}`, () => {});
    } else {
      it(title, async () => {
        const prefix = uniquePrefix();
        const t = tableNames(prefix);
        const store = await open('c1', { tablePrefix: prefix });
        // What a process that crashed at once left: a member record with a 1 s lease, never renewed.
        await store.create('member/worker/ghost', { ...leaseRecord('ghost', { n: 1 }), leaseDurationSeconds: 1 });
        await store.create('election/scheduler', leaseRecord('ghost'));
        const revision = async () => Number((await options.exec(`SELECT revision FROM ${t.state} WHERE id = 1`))[0]!.revision);
        const before = await revision();
        const viewer = await createRegistry({ ...(options.readOnlyUserConfig!('c1', { tablePrefix: prefix }) as object), identity: 'viewer', readOnly: true } as ConfigSource);
        registries.push(viewer);
        const events: string[] = [];
        viewer.watchMembers('worker', (e) => events.push(`${e.type} ${e.member.id}${e.type === 'removed' ? ` ${e.reason}` : ''}`));
        expect((await viewer.elections()).map((e) => e.holder?.identity)).toEqual(['ghost']);
        await waitFor(() => events.length === 2, WAIT_MS, 'the member to expire');
        expect(events).toEqual(['added ghost', 'removed ghost expired']);
        await viewer.close();
        expect(await revision()).toBe(before);
        expect((await store.list('member/')).records.map((r) => r.key)).toEqual(['member/worker/ghost']);
      });
    }
  });
}
