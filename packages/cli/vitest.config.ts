import { configDefaults, mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';
import { UNIT } from './vitest.unit.config.js';

// Two configs, not two projects: with a second project beside it, vitest 5 failed to resolve the
// optional peer @rollcall/pod-runner from this package's test files ("Could not resolve").
export default mergeConfig(sharedTestConfig, {
  test: {
    exclude: [...configDefaults.exclude, ...UNIT],
    // doctor's SelfSubjectAccessReview checks and the metrics endpoint need the real API server; release-stores.test.ts PostgreSQL and ZooKeeper
    globalSetup: ['@rollcall/tools/testenv/setup-kubernetes', '@rollcall/tools/testenv/setup-postgres', '@rollcall/tools/testenv/setup-zookeeper'],
    fileParallelism: false,
    testTimeout: 120_000,
  },
});
