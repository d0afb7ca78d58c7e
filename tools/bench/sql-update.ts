/**
 * `tsx tools/bench/sql-update.ts [--updates N] [--rounds R]`: compare-and-set
 * updates of one record, sequential, with the update reading back the row's
 * creation by `UPDATE … RETURNING` against one more SELECT, interleaved in one
 * run on SQLite (a temp file) and PostgreSQL (the test environment's server).
 * Prints the median per-update latency of each way per backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import type { RecordStore } from '@rollcall/core/spi';
import { readTestEnv } from '@rollcall/tools/testenv';

const { values } = parseArgs({ options: { updates: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '6' } } });
const updates = Number(values.updates);
const rounds = Number(values.rounds);

function record(i: number) {
  return { holderIdentity: 'bench', leaseDurationSeconds: 10, acquireTime: '2026-12-07T00:00:00.000000Z', renewTime: `2026-12-07T00:00:${String(i % 60).padStart(2, '0')}.000000Z`, leaseTransitions: 0 };
}

async function timeUpdates(store: RecordStore, key: string): Promise<number> {
  let stored = (await store.get(key as never)) ?? (await store.create(key as never, record(0)));
  const start = process.hrtime.bigint();
  for (let i = 1; i <= updates; i++) stored = await store.update(key as never, record(i), stored.version);
  return Number(process.hrtime.bigint() - start) / 1e3 / updates;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function compare(name: string, store: RecordStore): Promise<void> {
  const dialect = (store as unknown as { database: { dialect: { updateReturning?: boolean } } }).database.dialect;
  const key = `member/bench/sql-update-${process.pid}`;
  const times: Record<'returning' | 'select', number[]> = { returning: [], select: [] };
  await timeUpdates(store, key); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const way of r % 2 === 0 ? (['returning', 'select'] as const) : (['select', 'returning'] as const)) {
      Object.assign(dialect, { updateReturning: way === 'returning' });
      times[way].push(await timeUpdates(store, key));
    }
  }
  Object.assign(dialect, { updateReturning: true });
  const stored = await store.get(key as never);
  if (stored) await store.delete(key as never, stored.version);
  console.log(`${name}: ${updates} updates × ${rounds} rounds each; median µs per update: UPDATE … RETURNING ${median(times.returning).toFixed(0)}, UPDATE + SELECT ${median(times.select).toFixed(0)}`);
}

const dir = mkdtempSync(join(tmpdir(), 'rollcall-bench-sql-update-'));
try {
  // Through createRegistry, which loads the backends by name: tools does not depend on them.
  const open = async (registry: Registry, name: string) => {
    await compare(name, registryStore(registry));
    await registry.close();
  };
  await open(await createRegistry({ type: 'sqlite', cluster: 'bench', sqlite: { path: join(dir, 'bench.db') } }), 'sqlite');
  const pg = readTestEnv().postgres!;
  await open(await createRegistry({ type: 'postgres', cluster: 'bench', postgres: { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password } }), 'postgres');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
