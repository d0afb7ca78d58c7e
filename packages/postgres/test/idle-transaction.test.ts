import { afterAll, describe, expect, it } from 'vitest';
import { leaseRecord, rejection, waitFor } from '@rollcall/conformance';
import type { SqlRecordStore } from '@rollcall/sql';
import { createPostgresStore } from '../src/index.js';
import { testOptions, testSchema } from './support/postgres.js';

// Found on MariaDB by the e2e chaos soak: a candidate SIGSTOPped in the middle of a write held the
// state row's lock (every write takes it first), and every other process's writes timed out
// until it resumed — leaders stepped down, nobody could take over, members expired. A client
// that vanishes mid-transaction (paused, partitioned: the server cannot tell) must not block
// the other writers for longer than about the request timeout: here the server's
// idle_in_transaction_session_timeout ends it.

const schema = testSchema('idle_tx');
const stores: SqlRecordStore[] = [];
afterAll(async () => void (await Promise.allSettled(stores.map((s) => s.close()))));

const REQUEST_TIMEOUT_MS = 1000;

/** A store with a pool of its own (pools are shared by identical settings, so each gets a distinct poolSize). */
async function store(poolSize: number): Promise<SqlRecordStore> {
  const s = await createPostgresStore({ cluster: 'idle-tx', ...testOptions(schema.name, { poolSize }), requestTimeoutMs: REQUEST_TIMEOUT_MS });
  stores.push(s);
  return s;
}

describe('postgres: a writer that goes silent in the middle of a write transaction', () => {
  it('blocks the other writers no longer than about the request timeout, and its own write is rolled back', async () => {
    const [silent, other] = [await store(2), await store(3)];
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    let locked!: () => void;
    const stateRowLocked = new Promise<void>((resolve) => (locked = resolve));
    // Takes the state row's lock as every write does first, then says nothing: what the server
    // sees of a client that was paused or cut off right there.
    const { dialect, tables } = silent.database;
    const stuck = dialect.transaction(async (tx) => {
      await dialect.nextRevision(tx, tables);
      locked();
      await resumed;
    });
    await stateRowLocked;
    try {
      const started = performance.now();
      await waitFor(() => other.create('election/after-the-silent-one', leaseRecord('other')).then(() => true, () => false), 10_000, "the other client's write");
      expect(performance.now() - started).toBeLessThan(4 * REQUEST_TIMEOUT_MS);
    } finally {
      resume();
    }
    // The server ended the silent transaction: it committed nothing.
    await rejection(stuck);
  });
});
