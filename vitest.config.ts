import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    // The fault-tolerance suite runs on its own: vitest.faults.config.ts.
    exclude: ['test/faults/**', 'node_modules/**'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    pool: 'forks',
    // Each file gets its own database and Redis prefix, so files run in parallel.
    fileParallelism: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
