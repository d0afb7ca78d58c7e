import { down, up } from '../testenv/index.js';

/**
 * The smoke tests run on a private instance of the environment (own root, own ports), so
 * they neither disturb nor are disturbed by other packages' tests, which nx runs at the
 * same time against the shared instance — the fault tests here stop and kill servers.
 * The instance is stopped again afterwards.
 */
export const SELFTEST_ROOT = '/tmp/rollcall-testenv-selftest';
export const SELFTEST_PORT_BASE = '25000';

export async function setup(): Promise<void> {
  // normally set by vitest.config.ts already; kept here so the file stands alone
  process.env.ROLLCALL_TESTENV_ROOT ??= SELFTEST_ROOT;
  process.env.ROLLCALL_TESTENV_PORT_BASE ??= SELFTEST_PORT_BASE;
  await up();
}

export async function teardown(): Promise<void> {
  if (process.env.ROLLCALL_TESTENV_KEEP !== '1') await down();
}
