import { SqlRecordStore, type SqlDatabase } from '@rollcall/sql';

/**
 * The record store on a SQLite file: the SQL store, and the file it is in.
 * Stores of one process on the same file share one connection and one change
 * poller.
 */
export class SqliteStore extends SqlRecordStore {
  constructor(
    database: SqlDatabase,
    cluster: string,
    /** The absolute path of the database file. */
    readonly path: string,
    release: () => Promise<void>,
  ) {
    super(database, cluster, release);
  }
}
