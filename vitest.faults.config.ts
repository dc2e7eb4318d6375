import { defineConfig } from 'vitest/config';

/**
 * The fault-tolerance suite: real API and worker processes killed, Redis and PostgreSQL broken.
 * Slower than the main suite, so it runs on its own (`npm run test:faults`), one file at a time.
 */
export default defineConfig({
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    include: ['test/faults/**/*.test.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
