import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files whose subject a Redis Cluster or PgBouncer does not change (row rules, file readers,
 * documents, the partner CLI, the OpenAPI document, address matching, log
 * formats, migrations, which run against PostgreSQL itself, a TLS Redis a test starts itself, and
 * the catalogue's query plans, PostgreSQL's own). note: the plain run covers them;
 * `npm run test:cluster` and `test:pgbouncer` leave them out so that CI's whole run stays within
 * its time.
 */
const SAME_ON_EVERY_TOPOLOGY = [
  'test/docs/**',
  'test/shared/rows/**',
  'test/shared/import/file/**',
  // note: the partner CLI: what it sends and how it reads the answers, through the client package;
  // the service's side of each command is tested on every topology by the API's own tests, and
  // the package's partner path (test/client/partner-path.test.ts) runs on every topology
  'test/cli/partner/**',
  // note: their subject is the HTTP layer (hostile bytes, the framework's own errors, an
  // overloaded process's shedding); the imports they let through are the bulk tests', which run
  // on every topology
  'test/api/{framework-errors,hostile-input,load-shedding}.test.ts',
  // note: the OpenAPI document: what it says, and that what the service answers and accepts fits it
  'test/api/{openapi,openapi-refusals,openapi-refused-before-route,openapi-request-validation}.test.ts',
  'test/shared/access/allowed-ips.test.ts',
  'test/shared/infra/{log-format,migrate,migration-key-lifecycle,redis-tls}.test.ts',
  // note: the operator CLI's commands (the API's tests cover the same tables and keys on every
  // topology) and the PostgreSQL socket factory's dialling of hosts (PostgreSQL itself, dead ports)
  'test/cli/admin.test.ts',
  'test/shared/infra/db-socket.test.ts',
  'test/shared/repositories/catalogue-plans.test.ts',
  // note: the client package's generated types (and a partner's openapi-fetch project over them),
  // its packed files and its tarball installed, the README's example and its transport against
  // hand-made servers, the merge rows' types; its partner path runs on every topology
  'test/client/{generated-drift,merge-row-types,openapi-fetch-partner,package-contents,readme-example,tarball-install,transport}.test.ts',
];
const topologyRun = Boolean(process.env.TEST_REDIS_CLUSTER || process.env.TEST_PGBOUNCER);

export default defineConfig({
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    // The fault-tolerance suite runs on its own: vitest.faults.config.ts.
    exclude: ['test/faults/**', 'node_modules/**', ...(topologyRun ? SAME_ON_EVERY_TOPOLOGY : [])],
    reporters: ['default', './test/support/summary-reporter.ts'],
    pool: 'forks',
    // Each file gets its own database and Redis prefix, so files run in parallel.
    fileParallelism: true,
    // note: at least two files at once. vitest's default (cores - 1) runs them one by one on a
    // 2-core machine, where most of a test's time is spent waiting on PostgreSQL, Redis and the
    // worker: two at once took the suite from 224 s to 163 s there, all passing.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
