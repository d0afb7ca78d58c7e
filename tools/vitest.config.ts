import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // every server, on a private instance (see test/global-setup.ts)
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // the teardown stops the private instance; vitest must not exit in the middle of it
    teardownTimeout: 120_000,
    // fault tests stop and restart servers: no other file may use them meanwhile
    fileParallelism: false,
  },
});
