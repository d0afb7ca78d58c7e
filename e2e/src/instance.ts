import type { PrivateInstance } from '@rollcall/tools/testenv';

/**
 * The e2e scenarios restart servers, so they run on a private instance of the
 * test environment (its own root and ports), never on the shared one other
 * packages' tests use at the same time.
 */
export const E2E_INSTANCE: Readonly<PrivateInstance> = Object.freeze({ root: '/tmp/rollcall-testenv-e2e', portBase: 27000 });
