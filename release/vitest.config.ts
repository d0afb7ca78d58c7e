import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // Packing and installing every package into a fresh project: minutes on two shared cores, most of it npm.
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
