import { hasCode } from '@rollcall/core';
import { supports, SUPPORTED_MEMBERS } from '@rollcall/core/admin';
import type { RecordStore, WatchEvent } from '@rollcall/core/spi';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skipReason, type StoreCapabilities } from './capabilities.js';
import { collectWatch, describeEvent } from './collect-watch.js';
import { hostileRecordCases } from './hostile-record-cases.js';
import { uniqueCluster } from './names.js';
import { leaseRecord } from './records.js';
import { rejection, waitFor } from './wait-for.js';

/** What `storeConformance` needs from a backend. */
export interface StoreConformanceOptions {
  /** The backend's name, shown in every title: `memory`, `etcd`, ... */
  name: string;
  /**
   * Opens a new, connected store (a new client) for `cluster`. Called at least
   * once per case with a fresh cluster name; the suite closes every store it opened.
   */
  openStore(cluster: string): Promise<RecordStore>;
  /** The suite's hooks into the backend (compaction, partitions); cases needing a missing one are skipped, with the reason in the title. What the store itself can do, it declares in its `supports` manifest. */
  capabilities?: StoreCapabilities;
  /** Bound on a watch event reaching the watcher, and on the watch ending with an error. Milliseconds. Default 5000. */
  eventTimeoutMs?: number;
}

/** A payload whose JSON is exactly `bytes` bytes: a string of `bytes - 2` characters plus its quotes. */
function payloadOfBytes(bytes: number): string {
  return 'x'.repeat(bytes - 2);
}

function codeOf(err: unknown): string | undefined {
  return (err as { code?: string })?.code;
}

/**
 * Registers the record-store cases: the backend SPI's contract, tested on the
 * store directly. Call it at the top level of a vitest file.
 */
export function storeConformance(options: StoreConformanceOptions): void {
  const { name, capabilities = {} } = options;
  const eventTimeoutMs = options.eventTimeoutMs ?? 5000;

  describe(`${name}: record store (SPI v1)`, () => {
    const opened: RecordStore[] = [];
    const partitioned = new Set<RecordStore>();
    let cluster: string;
    let store: RecordStore;

    const open = async (forCluster: string): Promise<RecordStore> => {
      const s = await options.openStore(forCluster);
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      cluster = uniqueCluster('store');
      store = await open(cluster);
    });

    afterEach(async () => {
      for (const s of partitioned) await capabilities.heal?.(s);
      partitioned.clear();
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
    });

    describe('get and create-if-absent', () => {
      it('get of a key never written is undefined', async () => {
        expect(await store.get('member/worker/nobody')).toBeUndefined();
      });

      it('create stores every field and the payload, and get returns them with the same version', async () => {
        const written = leaseRecord('w1', { cpu: 0.5, status: 'NORMAL', tags: ['a', 'ü'], nested: { n: null, ok: true } }, 3);
        const created = await store.create('member/worker/w1', written);
        expect(created.key).toBe('member/worker/w1');
        expect(typeof created.version).toBe('string');
        expect(created.version).not.toBe('');
        expect(created.record).toEqual(written);
        const got = await store.get('member/worker/w1');
        expect(got).toEqual({ key: 'member/worker/w1', version: created.version, record: written, created: created.created });
      });

      it("keeps a member record's withdraw mark (withdrawn) through update, get, list and watch; an update without it clears it", async () => {
        const created = await store.create('member/worker/w1', leaseRecord('w1', { items: [1] }));
        const watch = collectWatch(store, 'member/worker/', (await store.list('member/worker/')).revision);
        const marked = await store.update('member/worker/w1', { ...created.record, withdrawn: true }, created.version);
        expect(marked.record).toEqual({ ...created.record, withdrawn: true });
        expect(await store.get('member/worker/w1')).toEqual(marked);
        expect((await store.list('member/worker/')).records).toEqual([marked]);
        const cleared = await store.update('member/worker/w1', created.record, marked.version);
        expect(cleared.record).toEqual(created.record);
        expect(await store.get('member/worker/w1')).toEqual(cleared);
        const seen = await watch.until((e) => e.type === 'put' && e.record.version === cleared.version, eventTimeoutMs);
        watch.close();
        // A watch that folds changes (ZooKeeper's) may leave the mark out; one it delivers is the record as written.
        for (const e of seen) expect([marked, cleared]).toContainEqual(e.type === 'put' ? e.record : e);
      });

      it('create on an existing key fails ALREADY_EXISTS and leaves the record as it was', async () => {
        const first = await store.create('election/e', leaseRecord('a'));
        const err = await rejection(store.create('election/e', leaseRecord('b')));
        expect(codeOf(err)).toBe('ALREADY_EXISTS');
        expect(await store.get('election/e')).toEqual(first);
      });
    });

    describe('compare-and-set update', () => {
      it('update on the current version replaces the record and returns a new version', async () => {
        const created = await store.create('lock/l', leaseRecord('a'));
        const updated = await store.update('lock/l', leaseRecord('b', undefined, 2), created.version);
        expect(updated.version).not.toBe(created.version);
        expect(updated.record.holderIdentity).toBe('b');
        expect(await store.get('lock/l')).toEqual(updated);
      });

      it('every update yields a new version, even when the content is identical', async () => {
        const same = leaseRecord('a');
        let current = await store.create('lock/l', same);
        const seen = new Set([current.version]);
        for (let i = 0; i < 5; i++) {
          current = await store.update('lock/l', same, current.version);
          expect(seen.has(current.version)).toBe(false);
          seen.add(current.version);
        }
      });

      it('update on a stale version fails CONFLICT and changes nothing', async () => {
        const created = await store.create('lock/l', leaseRecord('a'));
        const updated = await store.update('lock/l', leaseRecord('b'), created.version);
        const err = await rejection(store.update('lock/l', leaseRecord('c'), created.version));
        expect(codeOf(err)).toBe('CONFLICT');
        expect(await store.get('lock/l')).toEqual(updated);
      });

      it('update of a missing key fails NOT_FOUND and creates nothing', async () => {
        const created = await store.create('lock/other', leaseRecord('a'));
        const err = await rejection(store.update('lock/l', leaseRecord('b'), created.version));
        expect(codeOf(err)).toBe('NOT_FOUND');
        expect(await store.get('lock/l')).toBeUndefined();
      });
    });

    describe('compare-and-set delete', () => {
      it('delete on the current version removes the record', async () => {
        const created = await store.create('member/worker/w1', leaseRecord('w1'));
        await store.delete('member/worker/w1', created.version);
        expect(await store.get('member/worker/w1')).toBeUndefined();
      });

      it('delete on a stale version fails CONFLICT and the record stays', async () => {
        const created = await store.create('member/worker/w1', leaseRecord('w1'));
        const updated = await store.update('member/worker/w1', leaseRecord('w1', { n: 2 }), created.version);
        const err = await rejection(store.delete('member/worker/w1', created.version));
        expect(codeOf(err)).toBe('CONFLICT');
        expect(await store.get('member/worker/w1')).toEqual(updated);
      });

      it('delete of a missing key fails NOT_FOUND', async () => {
        const created = await store.create('member/worker/w1', leaseRecord('w1'));
        await store.delete('member/worker/w1', created.version);
        const err = await rejection(store.delete('member/worker/w1', created.version));
        expect(codeOf(err)).toBe('NOT_FOUND');
      });

      it('a deleted-then-recreated record never matches a version of its earlier life', async () => {
        const first = await store.create('election/e', leaseRecord('a'));
        await store.delete('election/e', first.version);
        const second = await store.create('election/e', leaseRecord('b'));
        expect(second.version).not.toBe(first.version);
        // A holder of the first life must not overwrite or delete the second one.
        expect(codeOf(await rejection(store.update('election/e', leaseRecord('a'), first.version)))).toBe('CONFLICT');
        expect(codeOf(await rejection(store.delete('election/e', first.version)))).toBe('CONFLICT');
        expect(await store.get('election/e')).toEqual(second);
      });
    });

    describe('creation order (StoredRecord.created)', () => {
      /** A decimal integer string, compared as a bigint (a ZooKeeper zxid passes 2^53). */
      const order = (created: string): bigint => {
        expect(created).toMatch(/^\d+$/);
        return BigInt(created);
      };

      it('create returns a creation order, and get, list and watch report the same one', async () => {
        const list = await store.list('member/worker/');
        const watch = collectWatch(store, 'member/worker/', list.revision);
        const made = await store.create('member/worker/c1', leaseRecord('c1'));
        expect(typeof made.created).toBe('string');
        expect(made.created).not.toBe('');
        expect((await store.get('member/worker/c1'))?.created).toBe(made.created);
        expect((await store.list('member/worker/')).records.find((r) => r.key === 'member/worker/c1')?.created).toBe(made.created);
        const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'member/worker/c1', eventTimeoutMs);
        watch.close();
        const put = seen.find((e) => e.type === 'put' && e.record.key === 'member/worker/c1');
        expect(put?.type === 'put' ? put.record.created : undefined).toBe(made.created);
      });

      it('update keeps the creation order, in its result, get, list and watch; so does a failed compare-and-set', async () => {
        const made = await store.create('member/worker/c2', leaseRecord('c2'));
        const list = await store.list('member/worker/');
        const watch = collectWatch(store, 'member/worker/', list.revision);
        const u1 = await store.update('member/worker/c2', leaseRecord('c2', { n: 1 }), made.version);
        const u2 = await store.update('member/worker/c2', leaseRecord('c2', { n: 2 }), u1.version);
        expect(u1.created).toBe(made.created);
        expect(u2.created).toBe(made.created);
        expect(codeOf(await rejection(store.update('member/worker/c2', leaseRecord('c2', { n: 3 }), made.version)))).toBe('CONFLICT');
        expect((await store.get('member/worker/c2'))?.created).toBe(made.created);
        expect((await store.list('member/worker/c2')).records[0]?.created).toBe(made.created);
        const seen = await watch.until((e) => e.type === 'put' && e.record.version === u2.version, eventTimeoutMs);
        watch.close();
        const puts = seen.filter((e) => e.type === 'put');
        expect(puts.length).toBeGreaterThan(0);
        for (const e of puts) expect(e.type === 'put' ? e.record.created : undefined).toBe(made.created);
      });

      it('a deleted-then-recreated record has a new creation order, never one of its earlier life', async () => {
        const lives: string[] = [];
        for (let i = 0; i < 3; i++) {
          const made = await store.create('lock/c3', leaseRecord(`life${i}`));
          const updated = await store.update('lock/c3', leaseRecord(`life${i}`, { n: 1 }), made.version);
          lives.push(made.created);
          await store.delete('lock/c3', updated.version);
        }
        expect(new Set(lives).size).toBe(3);
        if (supports(store, 'orderedCreation')) expect(lives.map(order)).toEqual([...lives.map(order)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      });

      it('creation orders are unique across keys and across clusters on one backend', async () => {
        const other = await open(uniqueCluster('store'));
        const seen: string[] = [];
        for (let i = 0; i < 4; i++) {
          seen.push((await store.create(`member/worker/u${i}`, leaseRecord(`u${i}`))).created);
          seen.push((await other.create(`member/worker/u${i}`, leaseRecord(`u${i}`))).created);
        }
        expect(new Set(seen).size).toBe(seen.length);
      });

      it('with supports.orderedCreation, a decimal integer, and every later create has a larger one, across keys and prefixes', async (ctx) => {
        if (!supports(store, 'orderedCreation')) {
          ctx.skip();
          return;
        }
        const keys = ['member/worker/o2', 'lock/o1', 'election/o3', 'member/worker/o1'];
        const made = [];
        for (const key of keys) made.push(await store.create(key, leaseRecord('o')));
        // An update in between moves no creation.
        await store.update('lock/o1', leaseRecord('o', { n: 1 }), made[1]!.version);
        made.push(await store.create('member/worker/o0', leaseRecord('o')));
        const orders = made.map((m) => order(m.created));
        for (let i = 1; i < orders.length; i++) expect(orders[i]! > orders[i - 1]!).toBe(true);
      });
    });

    describe('list', () => {
      it('returns exactly the records under the prefix, and a revision', async () => {
        await store.create('member/worker/w1', leaseRecord('w1'));
        await store.create('member/worker/w2', leaseRecord('w2'));
        await store.create('member/workers/x', leaseRecord('x')); // shares a string prefix, not the role
        await store.create('lock/member', leaseRecord('l'));
        const list = await store.list('member/worker/');
        expect(list.records.map((r) => r.key).sort()).toEqual(['member/worker/w1', 'member/worker/w2']);
        expect(list.corrupt).toEqual([]);
        expect(typeof list.revision).toBe('string');
        expect(list.revision).not.toBe('');
        const all = await store.list('');
        expect(all.records.map((r) => r.key).sort()).toEqual(['lock/member', 'member/worker/w1', 'member/worker/w2', 'member/workers/x']);
      });

      it('a prefix is a string prefix: a whole record key lists that record and the keys that extend it', async () => {
        for (const key of ['election/e1', 'election/e10', 'election/e1.b', 'election/e2', 'lock/e1', 'member/w/a1', 'member/w/a10', 'member/w/a2']) await store.create(key, leaseRecord('x'));
        expect((await store.list('election/e1')).records.map((r) => r.key).sort()).toEqual(['election/e1', 'election/e1.b', 'election/e10']);
        expect((await store.list('member/w/a1')).records.map((r) => r.key).sort()).toEqual(['member/w/a1', 'member/w/a10']);
      });

      it('the records of a list carry the versions a compare-and-set needs', async () => {
        await store.create('lock/l', leaseRecord('a'));
        const [listed] = (await store.list('lock/')).records;
        const updated = await store.update('lock/l', leaseRecord('b'), listed!.version);
        expect(updated.record.holderIdentity).toBe('b');
      });
    });

    describe('watch', () => {
      it('from a list revision sees exactly the later puts and deletes under the prefix, in order, and nothing earlier', async () => {
        const a = await store.create('member/worker/a', leaseRecord('a'));
        const b = await store.create('member/worker/b', leaseRecord('b'));
        const a1 = await store.update('member/worker/a', leaseRecord('a', { n: 1 }), a.version);
        const list = await store.list('member/worker/');
        const watch = collectWatch(store, 'member/worker/', list.revision);
        const a2 = await store.update('member/worker/a', leaseRecord('a', { n: 2 }), a1.version);
        await store.delete('member/worker/b', b.version);
        await store.create('lock/outside', leaseRecord('outside'));
        await store.create('member/workers/outside', leaseRecord('outside'));
        const c = await store.create('member/worker/c', leaseRecord('c'));
        const end = await store.create('member/worker/zz-end', leaseRecord('end'));
        const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'member/worker/zz-end', eventTimeoutMs);
        watch.close();
        expect(seen.map(describeEvent)).toEqual(['put member/worker/a a', 'delete member/worker/b', 'put member/worker/c c', 'put member/worker/zz-end end']);
        // Each put carries the record and the version its write returned.
        const puts = seen.filter((e) => e.type === 'put');
        expect(puts.map((e) => e.record)).toEqual([a2, c, end]);
        expect(new Set(seen.map((e) => e.revision)).size).toBe(seen.length);
      });

      it('of a whole record key sees that record and the keys that extend it, and nothing else', async () => {
        const list = await store.list('election/e1');
        const watch = collectWatch(store, 'election/e1', list.revision);
        await store.create('election/e2', leaseRecord('outside'));
        await store.create('lock/e1', leaseRecord('outside'));
        await store.create('election/e10', leaseRecord('e10'));
        await store.create('election/e1', leaseRecord('a'));
        // One write per key: a migrate store's merged watch may fold two quick writes of one key into the last.
        await store.create('election/e1z', leaseRecord('end'));
        const seen = await watch.until((e) => e.type === 'put' && e.record.record.holderIdentity === 'end', eventTimeoutMs);
        watch.close();
        expect(seen.map(describeEvent)).toEqual(['put election/e10 e10', 'put election/e1 a', 'put election/e1z end']);
      });

      it('asked for exactly one record, sees that record, may leave out the keys that extend it, and nothing outside the prefix', async () => {
        const list = await store.list('election/x1', { exact: true });
        expect(list.records).toEqual([]);
        const watch = collectWatch(store, 'election/x1', list.revision, { exact: true });
        await store.create('election/x2', leaseRecord('outside'));
        await store.create('election/x10', leaseRecord('x10'));
        await store.create('election/x1', leaseRecord('end'));
        const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'election/x1', eventTimeoutMs);
        watch.close();
        expect(seen.map(describeEvent).filter((e) => e !== 'put election/x10 x10')).toEqual(['put election/x1 end']);
        const again = await store.list('election/x1', { exact: true });
        expect(again.records.map((r) => r.key).filter((k) => k !== 'election/x10')).toEqual(['election/x1']);
      });

      it('from the revision of an empty prefix sees the first write', async () => {
        const list = await store.list('election/');
        expect(list.records).toEqual([]);
        const watch = collectWatch(store, 'election/', list.revision);
        const created = await store.create('election/e', leaseRecord('a'));
        const seen = await watch.until((e) => e.type === 'put', eventTimeoutMs);
        watch.close();
        expect(seen).toHaveLength(1);
        expect(seen[0]).toMatchObject({ type: 'put', record: created });
      });

      it('resumed from the revision of a seen event, repeats nothing and misses nothing', async () => {
        const list = await store.list('lock/');
        const first = collectWatch(store, 'lock/', list.revision);
        const one = await store.create('lock/one', leaseRecord('1'));
        await store.create('lock/two', leaseRecord('2'));
        const seen = await first.until((e) => e.type === 'put' && e.record.key === 'lock/two', eventTimeoutMs);
        first.close();
        const resumeFrom = seen.find((e) => e.type === 'put' && e.record.key === 'lock/one')!.revision;
        const resumed = collectWatch(store, 'lock/', resumeFrom);
        await store.update('lock/one', leaseRecord('1b'), one.version);
        const again = await resumed.until((e) => e.type === 'put' && e.record.record.holderIdentity === '1b', eventTimeoutMs);
        resumed.close();
        expect(again.map(describeEvent)).toEqual(['put lock/two 2', 'put lock/one 1b']);
      });

      it('a progress marked synced comes after every change since the start revision (required where the store declares supports.syncedProgress)', async () => {
        const list = await store.list('lock/');
        const one = await store.create('lock/s1', leaseRecord('1'));
        await store.update('lock/s1', leaseRecord('1b'), one.version);
        await store.create('lock/s2', leaseRecord('2'));
        const watch = collectWatch(store, 'lock/', list.revision);
        await watch.until((e) => e.type === 'put' && e.record.key === 'lock/s2', eventTimeoutMs);
        await store.create('lock/zz-end', leaseRecord('end'));
        await watch.until((e) => e.type === 'put' && e.record.key === 'lock/zz-end', eventTimeoutMs);
        const isSynced = (e: WatchEvent) => e.type === 'progress' && e.synced === true;
        if (supports(store, 'syncedProgress')) await waitFor(() => watch.all.some(isSynced), eventTimeoutMs, 'a synced progress');
        watch.close();
        const synced = watch.all.findIndex(isSynced);
        if (synced < 0) return; // this store marks none: the capability would have required one
        // What the listener knew when told it was synced: each key's last state (a store may fold two writes of a key).
        const known = new Map<string, string>();
        for (const e of watch.all.slice(0, synced)) if (e.type === 'put' && e.record.key !== 'lock/zz-end') known.set(e.record.key, e.record.record.holderIdentity);
        expect(Object.fromEntries(known)).toEqual({ 'lock/s1': '1b', 'lock/s2': '2' });
      });

      it('declares what it supports: each capability its manifest names has its member, and no optional member is there undeclared', () => {
        expect(store.supports, 'RecordStore.supports: `{}` when the store has nothing optional').toBeTypeOf('object');
        for (const [capability, member] of SUPPORTED_MEMBERS) {
          const present = (store as unknown as Record<string, unknown>)[member] !== undefined;
          // supports() throws, naming the member, when a declared capability lacks it
          expect(supports(store, capability), `${member} is ${present ? 'present' : 'absent'}: declare supports.${capability} ${present ? 'true' : 'false'}`).toBe(present);
        }
      });

      it('delivers nothing after close()', async () => {
        const list = await store.list('lock/');
        const closed = collectWatch(store, 'lock/', list.revision);
        const open = collectWatch(store, 'lock/', list.revision);
        await store.create('lock/a', leaseRecord('a'));
        await closed.until((e) => e.type === 'put', eventTimeoutMs);
        closed.close();
        await store.create('lock/b', leaseRecord('b'));
        await open.until((e) => e.type === 'put' && e.record.key === 'lock/b', eventTimeoutMs);
        open.close();
        expect(closed.events.map(describeEvent)).toEqual(['put lock/a a']);
      });

      if (capabilities.compact) {
        const compact = capabilities.compact;
        it('from a revision older than the store keeps ends with REVISION_TOO_OLD, and a relist recovers', async () => {
          const list = await store.list('');
          let current = await store.create('lock/l', leaseRecord('a'));
          for (let i = 0; i < 3; i++) current = await store.update('lock/l', leaseRecord(`a${i}`), current.version);
          await compact();
          const watch = collectWatch(store, '', list.revision);
          const error = await watch.ended(eventTimeoutMs);
          watch.close();
          expect(error.code).toBe('REVISION_TOO_OLD');
          expect(watch.events).toEqual([]);
          // The caller's recovery: list again and watch from the new revision.
          const relisted = await store.list('');
          expect(relisted.records).toEqual([current]);
          const resumed = collectWatch(store, '', relisted.revision);
          await store.delete('lock/l', current.version);
          const seen = await resumed.until((e) => e.type === 'delete', eventTimeoutMs);
          resumed.close();
          expect(seen.map(describeEvent)).toEqual(['delete lock/l']);
        });
      } else {
        it.skip(skipReason(name, 'compact()', 'a watch from a compacted revision ends with REVISION_TOO_OLD'), () => {});
      }
    });

    it('two clusters on one backend never see each other', async () => {
      const otherCluster = uniqueCluster('other');
      const other = await open(otherCluster);
      const otherList = await other.list('');
      const otherWatch = collectWatch(other, '', otherList.revision);
      const mine = await store.create('election/e', leaseRecord('mine'));
      expect(await other.get('election/e')).toBeUndefined();
      expect(codeOf(await rejection(other.update('election/e', leaseRecord('x'), mine.version)))).toBe('NOT_FOUND');
      const theirs = await other.create('election/e', leaseRecord('theirs'));
      expect((await store.get('election/e'))?.record.holderIdentity).toBe('mine');
      expect((await store.list('')).records.map((r) => r.record.holderIdentity)).toEqual(['mine']);
      expect((await other.list('')).records.map((r) => r.record.holderIdentity)).toEqual(['theirs']);
      await other.create('lock/end', leaseRecord('end'));
      const seen = await otherWatch.until((e) => e.type === 'put' && e.record.key === 'lock/end', eventTimeoutMs);
      otherWatch.close();
      expect(seen.map(describeEvent)).toEqual(['put election/e theirs', 'put lock/end end']);
      expect(theirs.record.holderIdentity).toBe('theirs');
    });

    describe('payload size', () => {
      it('a payload over maxPayloadBytes fails PAYLOAD_TOO_LARGE on create and on update, and nothing is written', async () => {
        const limit = store.maxPayloadBytes;
        expect(Number.isInteger(limit) && limit > 2).toBe(true);
        const tooBig = payloadOfBytes(limit + 1);
        expect(codeOf(await rejection(store.create('member/worker/big', leaseRecord('big', tooBig))))).toBe('PAYLOAD_TOO_LARGE');
        expect(await store.get('member/worker/big')).toBeUndefined();
        const small = await store.create('member/worker/w', leaseRecord('w', { ok: true }));
        expect(codeOf(await rejection(store.update('member/worker/w', leaseRecord('w', tooBig), small.version)))).toBe('PAYLOAD_TOO_LARGE');
        expect(await store.get('member/worker/w')).toEqual(small);
      });

      it('a payload of exactly maxPayloadBytes is kept whole', async () => {
        const exact = payloadOfBytes(store.maxPayloadBytes);
        await store.create('member/worker/exact', leaseRecord('exact', exact));
        expect((await store.get('member/worker/exact'))?.record.payload).toBe(exact);
      });
    });

    if (capabilities.partition && capabilities.heal) {
      const { partition, heal } = capabilities as Required<Pick<StoreCapabilities, 'partition' | 'heal'>>;
      it('an unreachable backend fails every call UNAVAILABLE, ends open watches, and writes nothing', async () => {
        const existing = await store.create('lock/l', leaseRecord('a'));
        const watch = collectWatch(store, '', (await store.list('')).revision);
        partitioned.add(store);
        await partition(store);
        const calls: Promise<unknown>[] = [
          store.get('lock/l'),
          store.create('lock/new', leaseRecord('n')),
          store.update('lock/l', leaseRecord('b'), existing.version),
          store.delete('lock/l', existing.version),
          store.list(''),
        ];
        // Handlers go on every call at once: a slow backend rejects them while the first is awaited.
        const outcomes = calls.map((call) => rejection(call));
        for (const outcome of outcomes) expect(codeOf(await outcome)).toBe('UNAVAILABLE');
        const error = await watch.ended(eventTimeoutMs);
        expect(hasCode(error, 'REVISION_TOO_OLD')).toBe(false);
        watch.close();
        await heal(store);
        partitioned.delete(store);
        expect(await store.get('lock/new')).toBeUndefined();
        expect(await store.get('lock/l')).toEqual(existing);
      });
    } else {
      it.skip(skipReason(name, 'partition()/heal()', 'an unreachable backend fails calls with UNAVAILABLE'), () => {});
    }

    if (capabilities.overwriteRaw) hostileRecordCases(name, open, capabilities.overwriteRaw);
    else it.skip(skipReason(name, 'overwriteRaw()', 'hostile records written past the store are corrupt or valid, and readers keep serving'), () => {});
  });
}
