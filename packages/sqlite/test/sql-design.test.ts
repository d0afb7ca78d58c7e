import { join } from 'node:path';
import { afterAll } from 'vitest';
import { sqlDesignConformance } from '@rollcall/conformance/sql';
import { createSqliteStore } from '../src/index.js';
import { rawConnection, tempDir } from './support/sqlite.js';

const path = join(tempDir(), 'design.db');
// Created once the first store made the file.
let raw: ReturnType<typeof rawConnection> | undefined;
afterAll(() => raw?.close());

sqlDesignConformance({
  name: 'sqlite',
  openStore: (cluster, options) => createSqliteStore({ cluster, path, ...options, requestTimeoutMs: 5000 }),
  registryConfig: (cluster, options) => ({ type: 'sqlite', cluster, sqlite: { path, ...options } }),
  exec: (sql, params) => (raw ??= rawConnection(path)).exec(sql, params),
});
