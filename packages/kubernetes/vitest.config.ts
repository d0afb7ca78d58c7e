import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig.test!;

/** Files that need no server: the smoke run on every supported Node (`test:unit`). */
const UNIT = ['test/admission-manifest.test.ts', 'test/kubeconfig.test.ts', 'test/object-names.test.ts', 'test/pod-owner.test.ts', 'test/readiness-probe.test.ts', 'test/selectors.test.ts'];

// One vitest run per instance (package.json's test script runs the projects in turn): a
// global setup points the test workers at its instance through the environment, which
// two projects' setups in one run would share.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'kubernetes',
          exclude: [...configDefaults.exclude, 'test/real-node/**', ...UNIT],
          globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'],
          // One API server for every file, and one file restarts it: files run one at a time.
          fileParallelism: false,
        },
      },
      {
        // Rollcall in real pods: the instance with a real node that the real-node suites share
        test: {
          ...shared,
          name: 'real-node',
          include: ['test/real-node/**/*.test.ts'],
          globalSetup: ['@rollcall/tools/testenv/setup-real-node'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      { test: { ...shared, name: 'unit', include: UNIT } },
    ],
  },
});
