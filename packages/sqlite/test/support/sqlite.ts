import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { SqlRow, SqlValue } from '@rollcall/sql';

/** A temporary directory for this test file, removed afterwards. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-sqlite-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface RawDatabase {
  prepare(sql: string): { reader: boolean; all(...p: SqlValue[]): SqlRow[]; run(...p: SqlValue[]): unknown };
  close(): void;
}

/** A connection of its own to `path`, as a person editing the file by hand (sqlite3 CLI) would have. */
export function rawConnection(path: string): { exec(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>; close(): void } {
  const Database = createRequire(import.meta.url)('better-sqlite3') as new (p: string, o: { timeout: number }) => RawDatabase;
  const db = new Database(path, { timeout: 5000 });
  return {
    async exec(sql, params = []) {
      const statement = db.prepare(sql);
      if (statement.reader) return statement.all(...params);
      statement.run(...params);
      return [];
    },
    close: () => db.close(),
  };
}
