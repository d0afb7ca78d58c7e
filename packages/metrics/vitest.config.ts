import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The derivation runs on the memory store; the end-to-end file on an embedded sqlite file: no server needed.
export default mergeConfig(sharedTestConfig, {});
