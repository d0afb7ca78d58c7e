import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

const shared = sharedTestConfig.test!;

export default defineConfig({
  test: {
    // the testenv teardown stops the private instance; vitest must not exit in the middle of it
    teardownTimeout: 120_000,
    projects: [
      {
        test: {
          ...shared,
          name: 'testenv',
          exclude: [...configDefaults.exclude, 'test/bench.test.ts', 'test/bench-scale.test.ts'],
          // every server, on a private instance (see test/global-setup.ts)
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // fault tests stop and restart servers: no other file may use them meanwhile
          fileParallelism: false,
        },
      },
      {
        // the benchmark on memory and sqlite, and the scale benchmark's pieces: no server, so none is started
        test: { ...shared, name: 'bench', include: ['test/bench.test.ts', 'test/bench-scale.test.ts'], testTimeout: 120_000 },
      },
    ],
  },
});
