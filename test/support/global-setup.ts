import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/shared/migrate.js';
import { databaseUrl, startServices } from './services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    redisUrl: string;
    /** migrated database every test file clones */
    templateDatabase: string;
    /** prefix of every database and Redis key this run creates */
    runId: string;
  }
}

/**
 * Once per run: reach the services, migrate a template database, and afterwards drop every
 * database and Redis key the run created.
 */
export default async function setup(project: TestProject) {
  const services = await startServices();
  const runId = `bit_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const templateDatabase = `${runId}_template`;

  const admin = postgres(databaseUrl(services.postgresUrl, 'postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${templateDatabase}"`);
  const template = postgres(databaseUrl(services.postgresUrl, templateDatabase), { max: 1, onnotice: () => {} });
  await migrate(template);
  await template.end();

  project.provide('postgresUrl', services.postgresUrl);
  project.provide('redisUrl', services.redisUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('runId', runId);

  return async () => {
    const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${`${runId}%`}`;
    for (const { datname } of leftovers) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
    await admin.end();
    const redis = new Redis(services.redisUrl);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${runId}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    await redis.quit();
    await services.stop();
  };
}
