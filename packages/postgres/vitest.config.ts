import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['@rollcall/tools/testenv/setup-postgres'],
    // The conformance file restarts the PostgreSQL every file uses: run files one at a time.
    fileParallelism: false,
  },
});
