import { defineConfig } from 'vitest/config';

/**
 * The fault-tolerance files that load the machine most: the soak's minute of imports under kills,
 * the burst of 500 concurrent 2 MB imports, the 95-100 MB uploads. note: CI runs this half beside
 * the other (`--project`), so that two of them never run at once.
 */
const HEAVY = [
  'test/faults/soak.test.ts',
  'test/faults/burst-fairness.test.ts',
  'test/faults/file-upload-door.test.ts',
  'test/faults/file-import-upload.test.ts',
];

const shared = {
  globalSetup: ['./test/support/global-setup.ts'],
  pool: 'forks' as const,
  // note: one file at a time; every file has its own database, Redis prefix and processes on
  // ports of their own, so the two halves side by side share nothing but the cores.
  fileParallelism: false,
  testTimeout: 120_000,
  hookTimeout: 60_000,
  teardownTimeout: 30_000,
};

/**
 * The fault-tolerance suite: real API and worker processes killed, Redis and PostgreSQL broken.
 * Slower than the main suite, so it runs on its own (`npm run test:faults`), one file at a time.
 *
 * note: in two halves, so that CI can run them side by side, each in a vitest of its own
 * (`--project 'faults: heavy'`, `--project 'faults: the rest'`; vitest runs the files of
 * projects that take one file at a time one after another, whatever the project). One after
 * another the files kept a 2-core machine a third busy (user and system time 316 s in 475 s):
 * most of a fault test waits on a lock to expire, a failover's timeout, a process to start.
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      { test: { ...shared, name: 'faults: heavy', include: HEAVY } },
      { test: { ...shared, name: 'faults: the rest', include: ['test/faults/**/*.test.ts'], exclude: HEAVY } },
    ],
  },
});
