// A separate process on the same SQLite file: run by multi-process.test.ts with
// `node child.mjs <mode> <db path> <count> [file]`; prints one JSON line when done
// (`serve`: when it leads, then it runs until a signal).
import { readFileSync, writeFileSync } from 'node:fs';
import { createRegistry, shutdownOnSignals } from '@rollcall/core';
import { createSqliteStore } from '../../dist/index.js';

const [mode, path, countText, file] = process.argv.slice(2);
const count = Number(countText);

if (mode === 'cas') {
  // Read-modify-write by compare-and-set: a lost update would show as a short count.
  const store = await createSqliteStore({ cluster: 'mp', path, requestTimeoutMs: 10_000 });
  let conflicts = 0;
  for (let done = 0; done < count; ) {
    const current = await store.get('lock/counter');
    try {
      await store.update('lock/counter', { ...current.record, payload: current.record.payload + 1 }, current.version);
      done++;
    } catch (err) {
      if (err.code !== 'CONFLICT') throw err;
      conflicts++;
    }
  }
  await store.close();
  console.log(JSON.stringify({ done: count, conflicts }));
} else if (mode === 'lock') {
  // Holds the lock `count` times; inside it, a read-then-write of a plain file that only mutual exclusion keeps whole.
  const registry = await createRegistry({
    type: 'sqlite',
    cluster: 'mp-lock',
    identity: `child-${process.pid}`,
    lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 },
    sqlite: { path },
  });
  const tokens = [];
  for (let i = 0; i < count; i++) {
    const lock = await registry.lock('shared', { timeoutMs: 30_000 });
    tokens.push(lock.fencingToken);
    const value = Number(readFileSync(file, 'utf8'));
    await new Promise((r) => setTimeout(r, 5));
    writeFileSync(file, String(value + 1));
    await lock.release();
  }
  await registry.close();
  console.log(JSON.stringify({ tokens }));
} else if (mode === 'serve') {
  // The README's shape: announce, campaign, and shutdownOnSignals for SIGTERM and SIGINT.
  const registry = await createRegistry({ type: 'sqlite', cluster: 'mp-serve', identity: 'child', sqlite: { path } });
  shutdownOnSignals(registry);
  await registry.announce({ role: 'worker', id: 'child' });
  await registry.campaign('scheduler').whenElected();
  console.log(JSON.stringify({ leading: true }));
}
