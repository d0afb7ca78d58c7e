import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// Both sides are in-process memory backends: no server needed (e2e/ runs it on ZooKeeper and etcd).
export default mergeConfig(sharedTestConfig, {});
