import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BackendConfig, type BenchBackend, crashChildWithConfig } from '../target.js';

/** A fresh SQLite file on local disk, removed afterwards. */
export const sqliteBackend: BenchBackend = {
  name: 'sqlite',
  servers: [],
  async prepare() {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-bench-sqlite-'));
    const path = join(dir, 'bench.db');
    // Stores of one process with equal options share a connection and a poller; a purge
    // interval differing by a millisecond per slot gives each its own, as a process would have.
    const backendConfig = (slot: number): BackendConfig => ({ type: 'sqlite', sqlite: { path, purgeIntervalMs: 60_000 + slot } });
    return {
      backendConfig,
      crashChild: crashChildWithConfig(backendConfig),
      idle: { na: 'embedded in the process, no server' },
      close: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};
