import { defineConfig } from 'vitest/config';

/** Settings every package's vitest config starts from. */
export const sharedTestConfig = defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests that start child processes and servers are slower than the default pool expects.
    pool: 'forks',
    reporters: ['default'],
  },
});
