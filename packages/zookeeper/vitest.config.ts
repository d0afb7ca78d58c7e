import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['@rollcall/tools/testenv/setup-zookeeper'],
    // The cases share one standalone server and one ensemble; the ensemble cases kill and restart its members.
    fileParallelism: false,
  },
});
