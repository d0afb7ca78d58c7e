// npm run bench -w @rollcall/sqlite  (BENCH_ROUNDS, BENCH_WINDOW_S to change the sizes)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSqlBenchmark } from '@rollcall/sql/benchmark';

const dir = mkdtempSync(join(tmpdir(), 'rollcall-sqlite-bench-'));
const path = join(dir, 'bench.db');
try {
  await runSqlBenchmark({
    name: 'sqlite',
    // A distinct busyTimeoutMs gives each slot its own connection and poller, as a separate process would have.
    config: (cluster, identity, slot) => ({ type: 'sqlite', cluster, identity, sqlite: { path, busyTimeoutMs: 50 + slot } }),
    rounds: Number(process.env.BENCH_ROUNDS ?? 50),
    windowSeconds: Number(process.env.BENCH_WINDOW_S ?? 10),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
