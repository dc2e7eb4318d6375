import { existsSync } from 'node:fs';

export interface ServiceUrls {
  /** a Postgres server URL whose user may create databases; the path is ignored */
  postgresUrl: string;
  redisUrl: string;
  stop(): Promise<void>;
}

function dockerLooksReachable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

/**
 * Testcontainers when a Docker engine answers; otherwise the local services named by
 * TEST_DATABASE_URL / TEST_REDIS_URL, or the machine's defaults (README.md#quick-start).
 */
export async function startServices(): Promise<ServiceUrls> {
  if (process.env.TEST_DATABASE_URL === undefined && process.env.TEST_REDIS_URL === undefined && dockerLooksReachable()) {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await getContainerRuntimeClient();
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const { RedisContainer } = await import('@testcontainers/redis');
      const [pg, redis] = await Promise.all([
        new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start(),
        new RedisContainer('redis:7-alpine').start(),
      ]);
      return {
        postgresUrl: pg.getConnectionUri(),
        redisUrl: redis.getConnectionUrl(),
        async stop() {
          await Promise.all([pg.stop(), redis.stop()]);
        },
      };
    } catch (error) {
      console.warn(`testcontainers unavailable (${(error as Error).message}); using local services`);
    }
  }
  return {
    postgresUrl: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    async stop() {},
  };
}

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
