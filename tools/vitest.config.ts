import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // the entry point other packages use: brings up ROLLCALL_TESTENV_SERVERS (default: all), fast when warm
    globalSetup: ['@rollcall/tools/testenv/global-setup'],
    testTimeout: 120_000,
    // fault tests stop and restart shared servers: no other file may use them meanwhile
    fileParallelism: false,
    hookTimeout: 120_000,
  },
});
