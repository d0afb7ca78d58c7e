import { configDefaults, defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

const shared = sharedTestConfig.test!;

// One vitest run per instance (package.json's test script runs the projects in turn): a
// global setup points the test workers at its instance through the environment, which
// two projects' setups in one run would share.
export default defineConfig({
  test: {
    // the testenv teardown stops the private instance; vitest must not exit in the middle of it
    teardownTimeout: 120_000,
    projects: [
      {
        test: {
          ...shared,
          name: 'testenv',
          exclude: [...configDefaults.exclude, 'test/bench.test.ts', 'test/bench-scale.test.ts', 'test/catalog.test.ts', 'test/go-build.test.ts', 'test/real-node.test.ts'],
          // every server, on a private instance (see test/global-setup.ts)
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // fault tests stop and restart servers: no other file may use them meanwhile
          fileParallelism: false,
        },
      },
      {
        // the real node (a kubelet with containerd), on the instance the real-node suites share
        test: {
          ...shared,
          name: 'real-node',
          include: ['test/real-node.test.ts'],
          globalSetup: ['./test/real-node-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
        },
      },
      {
        // the benchmark on memory and sqlite, the scale benchmark's pieces, the backend catalog and the Go build groups: no server, so none is started
        test: { ...shared, name: 'bench', include: ['test/bench.test.ts', 'test/bench-scale.test.ts', 'test/catalog.test.ts', 'test/go-build.test.ts'], testTimeout: 120_000 },
      },
    ],
  },
});
