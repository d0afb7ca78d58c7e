import { silentLogger } from '@rollcall/core';
import type { StoredRecord, WatchEvent } from '@rollcall/core/spi';
import { describe, expect, it } from 'vitest';
import { RevisionJournal } from '../src/revisions.js';
import { PrefixWatch, type NodeRead, type WatchHost } from '../src/watch.js';

const record = (created: string, version: string): StoredRecord => ({
  key: 'member/worker/w1',
  version,
  created,
  record: { holderIdentity: 'w1', leaseDurationSeconds: 20, acquireTime: null, renewTime: null, leaseTransitions: 0 },
});

/** Runs every promise callback already due: the watch's queue applies answered reads in its own chain of them. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

/** A host whose reads the test answers one by one, in the order they were asked. */
function scriptedHost() {
  const pending: ((read: NodeRead) => void)[] = [];
  const lists: ((list: { keys: string[]; pzxid: bigint }) => void)[] = [];
  const journal = new RevisionJournal();
  const host: WatchHost = {
    journal,
    logger: silentLogger,
    children: () => new Promise((resolve) => lists.push(resolve)),
    read: () => new Promise((resolve) => pending.push(resolve)),
    detach: () => {},
  };
  return { host, journal, pending, lists };
}

describe('zookeeper PrefixWatch: an answer older than one already applied', () => {
  it('applied after a read that already found the node created anew, takes nothing out of the view', async () => {
    const { host, journal, pending } = scriptedHost();
    const old = record('100', '100:3');
    const root = journal.root('member/', new Map([[old.key, old.version]]), 100n);
    const events: WatchEvent[] = [];
    const watch = new PrefixWatch(host, 'member/', { event: (e) => void events.push(e), error: () => {} }, new Map([[old.key, old.version]]), root.position, 100n, root.token);
    // The old record is marked (a data notification, its read in flight), deleted and created anew before that read is answered.
    watch.nodeChanged(old.key);
    watch.nodeChanged(old.key, true);
    const anew = record('177', '177:0');
    pending[0]!({ kind: 'record', stored: anew, mzxid: 177n });
    pending[1]?.({ kind: 'record', stored: anew, mzxid: 177n });
    await flush();
    expect(events.map((e) => (e.type === 'put' ? `put ${e.record.created}` : e.type))).toEqual(['put 177']);
    watch.close();
  });

  it('that a read confirms is delivered as the delete', async () => {
    const { host, journal, pending } = scriptedHost();
    const old = record('100', '100:3');
    const root = journal.root('member/', new Map([[old.key, old.version]]), 100n);
    const events: WatchEvent[] = [];
    const watch = new PrefixWatch(host, 'member/', { event: (e) => void events.push(e), error: () => {} }, new Map([[old.key, old.version]]), root.position, 100n, root.token);
    watch.nodeChanged(old.key, true);
    pending[0]?.({ kind: 'missing', key: old.key });
    await flush();
    expect(events.map((e) => e.type)).toEqual(['delete']);
    watch.close();
  });

  it("a list taken between a delete and a create under a key, answered after an earlier list's read found the new record, deletes nothing", async () => {
    const { host, journal, pending, lists } = scriptedHost();
    const old = record('100', '100:3');
    const root = journal.root('member/', new Map([[old.key, old.version]]), 100n);
    const events: WatchEvent[] = [];
    const watch = new PrefixWatch(host, 'member/', { event: (e) => void events.push(e), error: () => {} }, new Map([[old.key, old.version]]), root.position, 100n, root.token);
    watch.begin(); // a (re)start's full comparison: the list, then a read of every name
    watch.childrenChanged(); // the delete's notification: its list is sent before the comparison's reads
    lists[0]!({ keys: [old.key], pzxid: 150n });
    await flush();
    lists[1]!({ keys: [], pzxid: 160n }); // taken after the delete, before the create
    const anew = record('177', '177:0');
    pending[0]!({ kind: 'record', stored: anew, mzxid: 177n }); // sent after that list: the record created anew
    await flush();
    expect(events.map((e) => (e.type === 'put' ? `put ${e.record.created}` : e.type))).toEqual(['put 177', 'progress']);
    watch.close();
  });
});
