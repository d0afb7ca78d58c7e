import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The children are plain Node processes (test/fixtures): no server needed.
export default mergeConfig(sharedTestConfig, {});
