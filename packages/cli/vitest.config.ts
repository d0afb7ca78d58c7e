import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig.test!;

/** Files that need no server (sqlite and memory only): the smoke run on every supported Node (`test:unit`). */
const UNIT = ['test/commands.test.ts', 'test/demo.test.ts', 'test/manifests.test.ts', 'test/migrate-status.test.ts', 'test/read-only.test.ts'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'kubernetes',
          exclude: [...configDefaults.exclude, ...UNIT],
          // doctor's SelfSubjectAccessReview checks and the metrics endpoint need the real API server
          globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'],
          fileParallelism: false,
          testTimeout: 120_000,
        },
      },
      {
        test: {
          ...shared,
          name: 'unit',
          include: UNIT,
          // The demo runs eight node processes: on two shared cores, one file at a time.
          fileParallelism: false,
          testTimeout: 120_000,
        },
      },
    ],
  },
});
