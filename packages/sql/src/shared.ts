import { SqlDatabase, type SqlDatabaseOptions } from './sql-database.js';

interface Entry {
  opening: Promise<SqlDatabase>;
  users: number;
}

const open = new Map<string, Entry>();

/**
 * The process's database for `identity`, opened on first use and shared by
 * every store that names the same one (same connection settings and prefix),
 * so their watches share one poller. `release` closes it after its last user.
 * `identity` is held in memory only; it may contain a password, never log it.
 */
export async function acquireDatabase(identity: string, create: () => SqlDatabaseOptions): Promise<{ database: SqlDatabase; release: () => Promise<void> }> {
  let entry = open.get(identity);
  if (!entry) {
    const opening = (async () => {
      const database = new SqlDatabase(create());
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
