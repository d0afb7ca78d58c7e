import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// SQLite needs no server: every file works in its own temporary directory.
export default mergeConfig(sharedTestConfig, {});
