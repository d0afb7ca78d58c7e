import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// Every file answers from an HTTP server of its own on 127.0.0.1: no API server needed.
export default mergeConfig(sharedTestConfig, {});
