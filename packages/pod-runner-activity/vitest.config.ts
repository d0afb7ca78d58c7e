import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// Reads the built entry (dist/): the smoke target builds first.
export default mergeConfig(sharedTestConfig, {});
