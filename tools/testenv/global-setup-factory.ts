import { up } from './orchestrate.js';
import type { ServerName } from './catalog.js';

/**
 * A vitest global setup that brings `servers` up before any test file runs (idempotent,
 * a second or two when they already run) and leaves them running afterwards: other
 * packages' test runs may share them, and the next run starts warm. Stop them with
 * `npm run testenv -- down`.
 *
 * ```ts
 * // vitest.config.ts
 * export default defineConfig({ test: { globalSetup: ['@rollcall/tools/testenv/setup-etcd'] } });
 * ```
 */
export function createGlobalSetup(servers: readonly ServerName[]): () => Promise<void> {
  return async function setup(): Promise<void> {
    await up(servers);
  };
}

/** Server names from a comma-separated list such as ROLLCALL_TESTENV_SERVERS="etcd,mariadb". */
export function parseServerList(list: string | undefined): ServerName[] {
  return (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as ServerName[];
}
