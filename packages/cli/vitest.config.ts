import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    // The Kubernetes cases (doctor's SelfSubjectAccessReview checks) need the real API server.
    globalSetup: ['@rollcall/tools/testenv/setup-kubernetes'],
    // The demo runs eight node processes: on two shared cores, one file at a time.
    fileParallelism: false,
    testTimeout: 120_000,
  },
});
