import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

const shared = sharedTestConfig.test!;

// One vitest run per instance (package.json's test script runs the projects in turn): a
// global setup points the test workers at its instance through the environment.
export default defineConfig({
  test: {
    // The private instance's teardown stops servers.
    teardownTimeout: 120_000,
    projects: [
      {
        test: {
          ...shared,
          name: 'e2e',
          exclude: [...configDefaults.exclude, 'test/real-node/**'],
          // The soak restarts servers: a private instance, started and stopped by this setup.
          globalSetup: ['./test/global-setup.ts'],
          // One backend's soak at a time: each runs several candidate processes on two shared cores.
          fileParallelism: false,
          testTimeout: 180_000,
        },
      },
      {
        // The soak's candidates as pods: the instance with a real node that the real-node suites share.
        test: {
          ...shared,
          name: 'real-node',
          include: ['test/real-node/**/*.test.ts'],
          globalSetup: ['@rollcall/tools/testenv/setup-real-node'],
          fileParallelism: false,
          testTimeout: 240_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
