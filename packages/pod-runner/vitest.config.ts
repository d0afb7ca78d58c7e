import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'],
    // One API server for every file, and one file restarts it: files run one at a time.
    fileParallelism: false,
  },
});
