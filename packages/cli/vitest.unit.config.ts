import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

/** Files that need no server (sqlite and memory only): the smoke run on every supported Node (nx target `smoke`). */
export const UNIT = ['test/commands.test.ts', 'test/demo.test.ts', 'test/manifests.test.ts', 'test/migrate-status.test.ts', 'test/read-only.test.ts'];

export default defineConfig({
  test: {
    ...sharedTestConfig.test,
    include: UNIT,
    // The demo runs eight node processes: on two shared cores, one file at a time.
    fileParallelism: false,
    testTimeout: 120_000,
  },
});
