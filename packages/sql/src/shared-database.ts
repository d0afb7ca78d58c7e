import type { PluginContext } from '@rollcall/core/spi';
import { SqlDatabase } from './database.js';
import type { SqlDialect } from './dialect.js';
import type { SqlOptions } from './options.js';

/** How a backend opens its database, for {@link acquireDatabase}. */
export interface DatabaseSource {
  /**
   * Names the database and its settings: stores naming the same one share it.
   * Held in memory only; it may contain a password, never log it.
   */
  identity: string;
  /** Written into the state row when this process creates the schema, e.g. `@rollcall/mysql 0.1.0`. */
  createdBy: string;
  /**
   * The dialect opens the database read-only: the schema is checked, never
   * created (missing, it is NOT_FOUND), and nothing is purged. Default: the
   * context's `readOnly` (`registry.readOnly`), else false.
   */
  readOnly?: boolean;
  /** Opens the dialect's connections; called once per identity. */
  dialect(): SqlDialect;
}

interface Entry {
  opening: Promise<SqlDatabase>;
  users: number;
}

const open = new Map<string, Entry>();

/**
 * The process's database for `source.identity`, opened on first use (schema
 * checked or created) and shared by every store that names the same one, so
 * their watches share one poller. `release` closes it after its last user.
 */
export async function acquireDatabase(
  context: Omit<PluginContext<SqlOptions>, 'cluster'>,
  source: DatabaseSource,
): Promise<{ database: SqlDatabase; release: () => Promise<void> }> {
  // A registry that writes nothing (registry.readOnly) opens the database as the dialect's read-only does, and apart from writers.
  const readOnly = source.readOnly ?? context.readOnly ?? false;
  const identity = readOnly ? `${source.identity} (read-only)` : source.identity;
  let entry = open.get(identity);
  if (!entry) {
    const opening = (async () => {
      const { options, requestTimeoutMs, clock, logger } = context;
      const database = new SqlDatabase({ ...options, dialect: source.dialect(), createdBy: source.createdBy, readOnly, requestTimeoutMs, clock, logger });
      try {
        await database.open();
      } catch (err) {
        await database.close().catch(() => undefined);
        throw err;
      }
      return database;
    })();
    entry = { opening, users: 0 };
    open.set(identity, entry);
    const mine = entry;
    opening.catch(() => {
      if (open.get(identity) === mine) open.delete(identity);
    });
  }
  entry.users++;
  const held = entry;
  let database: SqlDatabase;
  try {
    database = await held.opening;
  } catch (err) {
    held.users--;
    throw err;
  }
  let released = false;
  return {
    database,
    release: async () => {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      if (open.get(identity) === held) open.delete(identity);
      await database.close();
    },
  };
}
