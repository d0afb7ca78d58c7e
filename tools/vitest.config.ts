import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

// The smoke tests get a private instance (see test/global-setup.ts); the test workers
// must see the same root and ports as the global setup.
process.env.ROLLCALL_TESTENV_ROOT ??= '/tmp/rollcall-testenv-selftest';
process.env.ROLLCALL_TESTENV_PORT_BASE ??= '25000';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // the teardown stops the private instance; vitest must not exit in the middle of it
    teardownTimeout: 120_000,
    // fault tests stop and restart servers: no other file may use them meanwhile
    fileParallelism: false,
  },
});
