import type { PrivateInstance } from '@rollcall/tools/testenv';

/**
 * The e2e scenarios restart servers, so they run on a private instance of the
 * test environment (its own root and ports), never on the shared one other
 * packages' tests use at the same time. CI uses the default; an engineer running
 * e2e beside another run sets ROLLCALL_E2E_TESTENV_ROOT and
 * ROLLCALL_E2E_TESTENV_PORT_BASE to a root and a port block of their own.
 */
export const E2E_INSTANCE: Readonly<PrivateInstance> = Object.freeze(e2eInstance(process.env));

function e2eInstance(env: Readonly<Record<string, string | undefined>>): PrivateInstance {
  const root = env.ROLLCALL_E2E_TESTENV_ROOT || '/tmp/rollcall-testenv-e2e';
  const portBase = Number(env.ROLLCALL_E2E_TESTENV_PORT_BASE || 27000);
  if (!Number.isInteger(portBase) || portBase < 1024 || portBase > 64000) throw new Error(`[rollcall] [e2e] ROLLCALL_E2E_TESTENV_PORT_BASE must be a port between 1024 and 64000, got ${JSON.stringify(env.ROLLCALL_E2E_TESTENV_PORT_BASE)}`);
  return { root, portBase };
}
