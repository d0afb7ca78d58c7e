import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // the entry point other packages use: brings up ROLLCALL_TESTENV_SERVERS (default: all), fast when warm
    globalSetup: ['@rollcall/tools/testenv/global-setup'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
