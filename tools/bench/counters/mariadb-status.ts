import { createConnection } from 'mysql2/promise';
import type { MariadbEnv } from '../../testenv/index.js';
import type { ServerCounter } from '../scenarios/idle-requests.js';

/**
 * MariaDB's global status: `Questions` (statements clients sent) in all, and
 * the `Com_*` counters by statement kind. The reading's own SHOW STATUS counts
 * as one question and is left out of the kinds, and so is `Com_stmt_execute`:
 * an executed prepared statement also counts under its kind (select, update).
 */
export function mariadbStatusCounter(env: MariadbEnv): ServerCounter {
  return {
    source: `MariaDB SHOW GLOBAL STATUS, Questions and Com_* at ${env.host}:${env.port}`,
    readCost: 1,
    async read() {
      const connection = await createConnection({ host: env.host, port: env.port, user: env.user, password: env.password });
      try {
        const [rows] = await connection.query("SHOW GLOBAL STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%'");
        const byMethod: Record<string, number> = {};
        let total = 0;
        for (const { Variable_name: name, Value: value } of rows as { Variable_name: string; Value: string }[]) {
          if (name === 'Questions') total = Number(value);
          else if (name !== 'Com_show_status' && name !== 'Com_stmt_execute' && Number(value) > 0) byMethod[name.slice('Com_'.length)] = Number(value);
        }
        return { total, byMethod };
      } finally {
        await connection.end();
      }
    },
  };
}
