/**
 * Run as its own Node process (spawnScript), so that the environment Node reads at start
 * (NODE_EXTRA_CA_CERTS) is the one an operator would give the service. For each case of
 * REDIS_PROBE_CASES (a JSON array of { label, env }) it loads the service's config from `env`
 * alone, connects a command client with the service's factory, sends PING and prints one JSON
 * line: [{ label, reply } | { label, error }].
 */
import { loadConfig } from '../../src/shared/infra/config.js';
import { createRedis, waitForRedis } from '../../src/shared/infra/redis.js';

interface ProbeCase {
  label: string;
  env: Record<string, string>;
}

const READY_TIMEOUT_MS = 3_000;

async function probe({ label, env }: ProbeCase): Promise<{ label: string; reply?: string; error?: string }> {
  const redis = createRedis(loadConfig(env), 'command');
  let lastError: string | undefined;
  let lastSentinelError: string | undefined;
  redis.on('error', (error: Error) => (lastError = error.message));
  // note: why a sentinel could not be used (a refused certificate, say) comes as sentinelError.
  redis.on('sentinelError', (error: Error) => (lastSentinelError = error.message));
  try {
    await waitForRedis(redis, READY_TIMEOUT_MS);
    return { label, reply: await redis.ping() };
  } catch (error) {
    const errors = [`last connection error: ${lastError ?? 'none'}`, ...(lastSentinelError === undefined ? [] : [`last sentinel error: ${lastSentinelError}`])];
    return { label, error: `${(error as Error).message}; ${errors.join('; ')}` };
  } finally {
    redis.disconnect();
  }
}

const cases = JSON.parse(process.env.REDIS_PROBE_CASES ?? '[]') as ProbeCase[];
console.log(JSON.stringify(await Promise.all(cases.map(probe))));
process.exit(0);
