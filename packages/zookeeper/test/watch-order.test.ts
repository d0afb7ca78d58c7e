import type { RegistryError } from '@rollcall/core';
import type { RecordKey, WatchEvent } from '@rollcall/core/spi';
import { describe, expect, it } from 'vitest';
import { RevisionJournal } from '../src/revisions.js';
import { PrefixWatch, type NodeRead, type WatchHost } from '../src/watch.js';

/**
 * A model of one ZooKeeper server and one session, no network: znodes with
 * czxid/mzxid, one-shot child and data watches armed by the reads that set
 * them, and the session's requests answered in the order sent, each at the
 * moment the test says the server processes it. A write fires the watches
 * armed on it, delivered at once (before any later reply, as the server does).
 */
class ModelServer implements WatchHost {
  readonly journal = new RevisionJournal();
  readonly logger = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined } as unknown as WatchHost['logger'];
  private zxid = 0n;
  readonly nodes = new Map<RecordKey, { czxid: bigint; mzxid: bigint; payload: number }>();
  private childWatch = false;
  private readonly dataWatches = new Set<RecordKey>();
  private readonly pending: (() => void)[] = [];
  watch: PrefixWatch | undefined;

  children(): Promise<{ keys: RecordKey[]; pzxid: bigint }> {
    return new Promise((resolve) => {
      this.pending.push(() => {
        this.childWatch = true;
        resolve({ keys: [...this.nodes.keys()].sort(), pzxid: this.zxid });
      });
    });
  }

  read(key: RecordKey): Promise<NodeRead> {
    return new Promise((resolve) => {
      this.pending.push(() => {
        const node = this.nodes.get(key);
        // getData on a missing znode sets no watch.
        if (!node) return resolve({ kind: 'missing', key });
        this.dataWatches.add(key);
        const record = { holderIdentity: key, leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 0, payload: node.payload };
        resolve({ kind: 'record', stored: { key, version: String(node.mzxid), record, created: String(node.czxid) }, mzxid: node.mzxid });
      });
    });
  }

  detach(): void {}

  /** Answers the oldest outstanding request, then lets its continuations run. */
  async process(): Promise<boolean> {
    const next = this.pending.shift();
    if (!next) return false;
    next();
    await settle();
    return true;
  }

  get outstanding(): number {
    return this.pending.length;
  }

  put(key: RecordKey, payload: number): void {
    const node = this.nodes.get(key);
    this.zxid++;
    if (node) {
      this.nodes.set(key, { ...node, mzxid: this.zxid, payload });
      this.fireData(key, false);
    } else {
      this.nodes.set(key, { czxid: this.zxid, mzxid: this.zxid, payload });
      this.fireChildren();
    }
  }

  remove(key: RecordKey): void {
    if (!this.nodes.delete(key)) return;
    this.zxid++;
    this.fireData(key, true);
    this.fireChildren();
  }

  private fireData(key: RecordKey, deleted: boolean): void {
    if (!this.dataWatches.delete(key)) return;
    this.watch?.nodeChanged(key, deleted);
  }

  private fireChildren(): void {
    if (!this.childWatch) return;
    this.childWatch = false;
    this.watch?.childrenChanged();
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

/** A watch over the model from its current state (as a list hands out), and the listener's view of it. */
async function watching(server: ModelServer) {
  const known = new Map([...server.nodes].map(([key, n]) => [key, String(n.mzxid)]));
  const root = server.journal.root('', known, 0n);
  const view = new Map<RecordKey, string>();
  for (const [key, n] of server.nodes) view.set(key, `${n.czxid}:${n.payload}`);
  const errors: RegistryError[] = [];
  const watch = new PrefixWatch(
    server,
    '',
    {
      event: (e: WatchEvent) => {
        if (e.type === 'put') view.set(e.record.key, `${e.record.created}:${e.record.record.payload as number}`);
        else if (e.type === 'delete') view.delete(e.key);
      },
      error: (err) => errors.push(err),
    },
    new Map(known),
    root.position,
    0n,
    root.token,
  );
  server.watch = watch;
  watch.begin();
  await drain(server);
  return { view, errors };
}

async function drain(server: ModelServer): Promise<void> {
  while (await server.process());
}

/** What the server holds, as the listener's view names it: creation and payload per key. */
const state = (server: ModelServer) => new Map([...server.nodes].map(([key, n]) => [key, `${n.czxid}:${n.payload}`]));

describe('prefix watch against the order of ZooKeeper notifications and replies (no server)', () => {
  it('a list in flight when a known key is deleted and created again lists it present; the delete notified after it does not lose the new node', async () => {
    const server = new ModelServer();
    server.put('member/w/a', 1);
    const { view, errors } = await watching(server);
    server.put('member/w/x', 1); // the child watch fires: a list is sent, and the child watch stays unarmed until the server answers it
    expect(server.outstanding).toBe(1);
    server.remove('member/w/a'); // the data watch on a fires (deleted); no child event: the list has not re-armed it
    server.put('member/w/a', 2); // created again: no watch on it at all
    await drain(server); // the list answers now: a present, and known when it was read
    expect(errors).toEqual([]);
    expect(view).toEqual(state(server));
  });

  it('over random seeded interleavings of writes and replies, the listener ends with what the server holds', async () => {
    const keys = ['member/w/a', 'member/w/b', 'member/w/c'];
    for (let seed = 1; seed <= 300; seed++) {
      let s = seed;
      const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const server = new ModelServer();
      server.put(keys[0]!, 0);
      const { view, errors } = await watching(server);
      const trace: string[] = [];
      for (let step = 0; step < 40; step++) {
        const r = random();
        const key = keys[Math.floor(random() * keys.length)]!;
        if (r < 0.4 && server.outstanding > 0) {
          trace.push('reply');
          await server.process();
        } else if (r < 0.75) {
          trace.push(`put ${key}`);
          server.put(key, step);
        } else {
          trace.push(`delete ${key}`);
          server.remove(key);
        }
      }
      await drain(server);
      expect(errors).toEqual([]);
      expect(view, `seed ${seed}: ${trace.join(', ')}`).toEqual(state(server));
    }
  });
});
