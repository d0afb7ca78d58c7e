import { createRequire } from 'node:module';
import type { PostgresEnv } from '../../testenv/index.js';
import type { ServerCounter } from '../scenarios/idle-requests.js';

interface Client {
  connect(): Promise<void>;
  query(sql: string): Promise<{ rows: { kind: string; calls: string }[] }>;
  end(): Promise<void>;
}
const pg = createRequire(import.meta.url)('pg') as { Client: new (config: Record<string, unknown>) => Client };

/**
 * PostgreSQL's `pg_stat_statements` (loaded by the test server): every
 * statement the server finished, utility statements (BEGIN, COMMIT, LISTEN)
 * included, summed over the whole server and split by the statement's first
 * word. The readings' own statements (those naming pg_stat_statements) are
 * left out, of the total and of the kinds.
 */
export function postgresStatementsCounter(env: PostgresEnv): ServerCounter {
  return {
    source: `PostgreSQL pg_stat_statements, calls by the statement's first word, at ${env.host}:${env.port}`,
    readCost: 0,
    async read() {
      const client = new pg.Client({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT lower(split_part(ltrim(query), ' ', 1)) AS kind, SUM(calls)::text AS calls FROM pg_stat_statements WHERE query NOT LIKE '%pg\\_stat\\_statements%' GROUP BY 1`);
        const byMethod: Record<string, number> = {};
        let total = 0;
        for (const { kind, calls } of rows) {
          total += Number(calls);
          byMethod[kind] = (byMethod[kind] ?? 0) + Number(calls);
        }
        return { total, byMethod };
      } finally {
        await client.end();
      }
    },
  };
}
