// npm run bench -w @rollcall/mysql  (needs `npm run testenv -- up mariadb`; BENCH_ROUNDS, BENCH_WINDOW_S to change the sizes)
import { createRequire } from 'node:module';
import { readTestEnv } from '@rollcall/tools/testenv';
import { runSqlBenchmark } from '@rollcall/sql/benchmark';

const env = readTestEnv().mariadb;
if (!env) throw new Error('MariaDB is not up: run `npm run testenv -- up mariadb`');
const database = `rollcall_bench_${process.pid}`;
type Conn = { query(sql: string): Promise<unknown>; end(): Promise<void> };
const mysql = createRequire(import.meta.url)('mysql2/promise') as { createConnection(o: object): Promise<Conn> };
const admin = await mysql.createConnection({ host: env.host, port: env.port, user: env.user, password: env.password });
await admin.query(`CREATE DATABASE ${database}`);
try {
  await runSqlBenchmark({
    name: `mysql (MariaDB ${env.version})`,
    // A distinct poolSize gives each slot its own pool and poller, as a separate process would have.
    config: (cluster, identity, slot) => ({
      type: 'mysql',
      cluster,
      identity,
      mysql: { host: env.host, port: env.port, user: env.user, password: env.password, database, poolSize: 1 + (slot % 50) },
    }),
    rounds: Number(process.env.BENCH_ROUNDS ?? 50),
    windowSeconds: Number(process.env.BENCH_WINDOW_S ?? 10),
  });
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  await admin.end();
}
