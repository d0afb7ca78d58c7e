import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig.test!;

// One vitest run per instance (package.json's test script runs the projects in turn): a
// global setup points the test workers at its instance through the environment, which
// two projects' setups in one run would share.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'pod-runner',
          exclude: [...configDefaults.exclude, 'test/real-node*.test.ts', 'test/unit/**'],
          globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'],
          // One API server for every file, and one file restarts it: files run one at a time.
          fileParallelism: false,
        },
      },
      {
        // tasks that really run: the instance with a real node that the real-node suites share
        test: {
          ...shared,
          name: 'real-node',
          include: ['test/real-node*.test.ts'],
          globalSetup: ['@rollcall/tools/testenv/setup-real-node'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      {
        // the queue, the reconciler and the timers on core's ManualClock: no server
        test: {
          ...shared,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
    ],
  },
});
