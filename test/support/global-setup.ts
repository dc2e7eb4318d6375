import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/shared/infra/migrate.js';
import { startPgBouncer } from './pgbouncer.js';
import { startRedisCluster, type RedisCluster } from './redis-servers.js';
import { databaseUrl, startServices } from './services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    redisUrl: string;
    /** REDIS_URL, or REDIS_CLUSTER_NODES when the run is on a Redis Cluster (TEST_REDIS_CLUSTER=1) */
    redisEnv: Record<string, string>;
    /** what every Redis prefix of the run starts with; a hash tag opens it on a cluster */
    redisPrefixBase: string;
    /** PgBouncer (transaction pooling) in front of postgresUrl when TEST_PGBOUNCER=1, else '' */
    pgbouncerUrl: string;
    /** migrated database every test file clones */
    templateDatabase: string;
    /** prefix of every database and Redis key this run creates */
    runId: string;
  }
}

/**
 * Once per run: reach the services, migrate a template database, and afterwards drop every
 * database and Redis key the run created. With TEST_REDIS_CLUSTER=1 the run starts a Redis
 * Cluster of three masters of its own and runs every test on it; with TEST_PGBOUNCER=1 it starts
 * PgBouncer in transaction pooling mode and every service under test reaches PostgreSQL through
 * it (DATABASE_URL), listening for notifications directly (DATABASE_LISTEN_URL).
 */
export default async function setup(project: TestProject) {
  const services = await startServices();
  const cluster = process.env.TEST_REDIS_CLUSTER === '1' ? await startRedisCluster(3) : undefined;
  const postgresServer = new URL(services.postgresUrl);
  const pgbouncer =
    process.env.TEST_PGBOUNCER === '1'
      ? await startPgBouncer({ host: postgresServer.hostname, port: Number(postgresServer.port || 5432) })
      : undefined;
  const runId = `bit_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const templateDatabase = `${runId}_template`;

  const admin = postgres(databaseUrl(services.postgresUrl, 'postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${templateDatabase}"`);
  const template = postgres(databaseUrl(services.postgresUrl, templateDatabase), { max: 1, onnotice: () => {} });
  await migrate(template);
  await template.end();

  project.provide('postgresUrl', services.postgresUrl);
  project.provide('redisUrl', services.redisUrl);
  project.provide('redisEnv', cluster ? { REDIS_CLUSTER_NODES: cluster.nodesEnv } : { REDIS_URL: services.redisUrl });
  // note: on a cluster each test prefix is a hash tag, {bit_..._<hex>}, as an operator's would be.
  project.provide('redisPrefixBase', cluster ? `{${runId}` : runId);
  project.provide('pgbouncerUrl', pgbouncer ? pgbouncer.urlFor(services.postgresUrl) : '');
  project.provide('templateDatabase', templateDatabase);
  project.provide('runId', runId);

  return async () => {
    const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${`${runId}%`}`;
    for (const { datname } of leftovers) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
    await admin.end();
    await pgbouncer?.stop();
    if (cluster) {
      await checkAndStopCluster(cluster, runId);
    } else {
      await deleteKeys(new Redis(services.redisUrl), `${runId}*`);
    }
    await services.stop();
  };
}

async function deleteKeys(redis: Redis, pattern: string): Promise<string[]> {
  const deleted: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    // note: one key at a time, since the keys of a cluster node may sit in different slots.
    for (const key of keys) await redis.del(key);
    deleted.push(...keys);
  } while (cursor !== '0');
  redis.disconnect();
  return deleted;
}

/**
 * The cluster is this run's own, so every key in it must be under the run's prefix, and no node
 * may have answered a command with CROSSSLOT.
 */
async function checkAndStopCluster(cluster: RedisCluster, runId: string): Promise<void> {
  const problems: string[] = [];
  let checked = 0;
  try {
    for (const master of cluster.masters) {
      const client = master.client();
      const stats = await client.info('errorstats');
      const crossSlot = /errorstat_CROSSSLOT:count=(\d+)/.exec(stats);
      if (crossSlot) problems.push(`node ${master.port} answered ${crossSlot[1]} commands with CROSSSLOT`);
      const keys = await deleteKeys(client, '*');
      const outside = keys.filter((key) => !key.startsWith(`{${runId}`));
      if (outside.length > 0) problems.push(`node ${master.port} holds keys outside the prefix: ${outside.slice(0, 5).join(', ')}`);
      checked += keys.length;
    }
  } finally {
    await cluster.stop();
  }
  if (problems.length > 0) {
    // note: vitest reports an error thrown here but still exits 0; the exit code must say it.
    process.exitCode = 1;
    throw new Error(`Redis Cluster run: ${problems.join('; ')}`);
  }
  console.log(`Redis Cluster run: ${checked} keys checked and deleted, all under the run's prefix; no node answered CROSSSLOT`);
}
