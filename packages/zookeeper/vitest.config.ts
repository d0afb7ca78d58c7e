import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig.test!;

/** Files that need no server: the smoke run on every supported Node (`test:unit`). */
const UNIT = ['test/revisions.test.ts', 'test/watch-order.test.ts'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'zookeeper',
          exclude: [...configDefaults.exclude, ...UNIT],
          globalSetup: ['@rollcall/tools/testenv/setup-zookeeper'],
          // The cases share one standalone server and one ensemble; the ensemble cases kill and restart its members.
          fileParallelism: false,
        },
      },
      { test: { ...shared, name: 'unit', include: UNIT } },
    ],
  },
});
