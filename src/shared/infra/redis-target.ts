/** A `host:port` Redis node or sentinel. */
export interface RedisAddress {
  host: string;
  port: number;
}

/**
 * Credentials and TLS of the Redis servers themselves (cluster nodes, or the master and replicas).
 * note: TLS verifies the servers' certificates against Node's CAs; a private CA is added with
 * NODE_EXTRA_CA_CERTS, which Node reads at start.
 */
export interface RedisAuth {
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
}

/**
 * Which Redis the service runs on: one server, a Redis Cluster, or the master a group of
 * sentinels names. Exactly one is configured (see parseRedisTarget).
 */
export type RedisTarget =
  | { mode: 'single'; url: string; tls: boolean }
  | ({ mode: 'cluster'; nodes: RedisAddress[] } & RedisAuth)
  | ({
      mode: 'sentinel';
      sentinels: RedisAddress[];
      name: string;
      sentinelPassword: string | undefined;
      /** TLS to the sentinels themselves, apart from `tls` (to the master and replicas they name) */
      sentinelTls: boolean;
    } & RedisAuth);

export interface RedisEnv {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: string | undefined;
  REDIS_SENTINELS?: string | undefined;
  REDIS_SENTINEL_NAME?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
  REDIS_SENTINEL_TLS?: boolean | undefined;
  REDIS_USERNAME?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
  REDIS_TLS: boolean;
  REDIS_PREFIX: string;
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Throws a message naming the variable; config.ts turns it into a ConfigError. */
function parseAddresses(variable: string, raw: string): RedisAddress[] {
  const parts = raw.split(',').map((part) => part.trim()).filter(Boolean);
  if (parts.length === 0) throw new Error(`${variable}: give at least one host:port`);
  return parts.map((part) => {
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(part);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) throw new Error(`${variable}: "${part}" is not host:port`);
    return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
  });
}

/**
 * The hash tag of a key prefix, as Redis Cluster reads it: the text between the first `{` and
 * the first `}` after it, when that text is not empty. note: it must close inside the prefix,
 * or the tag of each key would run into the key's own name and scatter the keys over slots.
 */
export function prefixHashTag(prefix: string): string | undefined {
  const open = prefix.indexOf('{');
  if (open === -1) return undefined;
  const close = prefix.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return prefix.slice(open + 1, close);
}

/**
 * Exactly one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS (REDIS_URL alone falls back
 * to its default), and on a cluster a prefix with a hash tag. note: REDIS_TLS=true means TLS to
 * every Redis the service talks to: a `redis://` URL, and the sentinels unless
 * REDIS_SENTINEL_TLS=false says they speak plain text; a secure setting must never be ignored in
 * silence.
 */
export function parseRedisTarget(env: RedisEnv): RedisTarget {
  const chosen = (['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'] as const).filter((name) => env[name] !== undefined);
  if (chosen.length > 1) {
    throw new Error(`${chosen.join(', ')}: set only one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS`);
  }
  const auth: RedisAuth = { username: env.REDIS_USERNAME, password: env.REDIS_PASSWORD, tls: env.REDIS_TLS };
  if (env.REDIS_CLUSTER_NODES !== undefined) {
    if (prefixHashTag(env.REDIS_PREFIX) === undefined) {
      throw new Error(
        `REDIS_PREFIX: on a Redis Cluster it needs a hash tag, e.g. {${env.REDIS_PREFIX.replace(/[{}]/g, '')}}, so that every key of the ` +
          'service (queue, rows, limits) lands in one slot; BullMQ and the API read several keys in one command',
      );
    }
    return { mode: 'cluster', nodes: parseAddresses('REDIS_CLUSTER_NODES', env.REDIS_CLUSTER_NODES), ...auth };
  }
  if (env.REDIS_SENTINELS !== undefined) {
    if (env.REDIS_SENTINEL_NAME === undefined) throw new Error('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the monitored master\'s name)');
    return {
      mode: 'sentinel',
      sentinels: parseAddresses('REDIS_SENTINELS', env.REDIS_SENTINELS),
      name: env.REDIS_SENTINEL_NAME,
      sentinelPassword: env.REDIS_SENTINEL_PASSWORD,
      sentinelTls: env.REDIS_SENTINEL_TLS ?? env.REDIS_TLS,
      ...auth,
    };
  }
  return { mode: 'single', url: env.REDIS_URL ?? DEFAULT_REDIS_URL, tls: env.REDIS_TLS };
}
