import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default mergeConfig(sharedTestConfig, {
  test: {
    globalSetup: ['@rollcall/tools/testenv/setup-mariadb'],
    // One file restarts the MariaDB every file uses: run files one at a time.
    fileParallelism: false,
  },
});
