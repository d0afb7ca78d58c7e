import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['@rollcall/tools/testenv/setup-etcd'],
    // Some files restart or compact the one etcd every file uses: run files one at a time.
    fileParallelism: false,
    // Fault cases wait out etcd restarts (a graceful stop takes up to ~8 s with open watches).
    testTimeout: 90_000,
  },
});
