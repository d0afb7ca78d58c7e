import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // The soak restarts servers: a private instance, started and stopped by this setup.
    globalSetup: ['./test/global-setup.ts'],
    // One backend's soak at a time: each runs several candidate processes on two shared cores.
    fileParallelism: false,
    testTimeout: 180_000,
    teardownTimeout: 120_000,
  },
});
