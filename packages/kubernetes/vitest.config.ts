import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: { globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'] },
});
