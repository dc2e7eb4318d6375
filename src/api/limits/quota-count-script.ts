import type { RedisClient } from '../../shared/infra/redis.js';

/**
 * rate-limiter-flexible's count of one window, word for word its RateLimiterRedis script
 * (`incrTtlLuaScript`: the key set to 0 with the window's expiry unless it exists, increased by
 * the points, its PTTL read, the expiry set again if it had none), as a Lua function: one script
 * then counts both of an account's windows, under the keys the library names
 * (`RateLimiterRedis.getKey`), with its values and expiries, in one command instead of two.
 * note: test/api/limits/quota-count-script.test.ts holds the two to the same counts and expiries.
 */
const COUNT_WINDOW = `
local function count(key, points, sec)
  redis.call('set', key, 0, 'EX', sec, 'NX')
  local consumed = redis.call('incrby', key, points)
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('expire', key, sec)
    ttl = 1000 * sec
  end
  return consumed, ttl
end`;

const COUNT_BOTH = `
local m, mt = count(KEYS[1], ARGV[1], ARGV[2])
local d, dt = count(KEYS[2], ARGV[1], ARGV[3])
return {2, m, mt, d, dt}`;

/**
 * KEYS: minute window, day window (the account's). ARGV: points, the minute's and the day's
 * length in seconds. Returns `{2, minute count, its ms left, day count, its ms left}`.
 */
const COUNT = `${COUNT_WINDOW}${COUNT_BOTH}`;

/**
 * The checks an API-key request passes before its quota (docs/access.md#order-of-checks), read in
 * the command that counts it: KEYS 3 and 4 are the client's failed attempts (rate-limiter-flexible's
 * lockout key) and the auth version; ARGV 4 and 5 the failures that lock out and the version the
 * key was cached under. A locked-out client (`{0, ms the lockout has left}`) or a key cached under
 * an older version (`{1, the version now}`) is not counted: the request is refused, or its key
 * loaded again, before its quota, as the order of checks says. note: the version is read when the
 * request is already here, as a read of its own would be, so a revocation that committed before
 * the request arrived is seen by it.
 */
const COUNT_BEHIND_GATE = `${COUNT_WINDOW}
local failures = tonumber(redis.call('get', KEYS[3]))
if failures ~= nil and failures >= tonumber(ARGV[4]) then return {0, redis.call('pttl', KEYS[3])} end
local version = redis.call('get', KEYS[4]) or '0'
if version ~= ARGV[5] then return {1, version} end
${COUNT_BOTH}`;

/** The windows' keys (rate-limiter-flexible's) and lengths. */
export interface QuotaKeys {
  minuteKey: string;
  dayKey: string;
  minuteSec: number;
  daySec: number;
}

/** What must hold before a request is counted: see COUNT_BEHIND_GATE. */
export interface QuotaGate {
  /** the client's failed attempts (AuthLockout.failureKey) and how many lock it out */
  failureKey: string;
  lockoutAt: number;
  /** the auth version's key and the version the request's key was cached under */
  versionKey: string;
  version: string;
}

/** Both windows after a count: the count in Redis and the ms the window has left. */
export interface WindowsCounted {
  outcome: 'counted';
  minute: { count: number; msBeforeNext: number };
  day: { count: number; msBeforeNext: number };
}

/** A gate that did not hold; nothing was counted. */
export type GateRefusal = { outcome: 'locked'; msLeft: number } | { outcome: 'stale'; version: string };

type Reply = [2, number, number, number, number] | [0, number] | [1, string];

type ScriptClient = RedisClient & {
  quotaCount(minuteKey: string, dayKey: string, points: number, minuteSec: number, daySec: number): Promise<Reply>;
  quotaCountBehindGate(
    minuteKey: string,
    dayKey: string,
    failureKey: string,
    versionKey: string,
    points: number,
    minuteSec: number,
    daySec: number,
    lockoutAt: number,
    version: string,
  ): Promise<Reply>;
};

function read(reply: Reply): WindowsCounted | GateRefusal {
  if (reply[0] === 0) return { outcome: 'locked', msLeft: reply[1] };
  if (reply[0] === 1) return { outcome: 'stale', version: reply[1] };
  return { outcome: 'counted', minute: { count: reply[1], msBeforeNext: reply[2] }, day: { count: reply[3], msBeforeNext: reply[4] } };
}

/**
 * Counts points in an account's two quota windows in one command, behind the request's gate when
 * one is given. note: on a Redis Cluster every key of a script must hash to one slot; the keys all
 * start with REDIS_PREFIX, whose hash tag the cluster mode requires
 * (docs/scaling.md#what-a-single-hash-tag-means).
 */
export class QuotaCountScript {
  private readonly redis: ScriptClient;

  constructor(redis: RedisClient) {
    redis.defineCommand('quotaCount', { numberOfKeys: 2, lua: COUNT });
    redis.defineCommand('quotaCountBehindGate', { numberOfKeys: 4, lua: COUNT_BEHIND_GATE });
    this.redis = redis as ScriptClient;
  }

  async count(keys: QuotaKeys, points: number): Promise<WindowsCounted> {
    const counted = read(await this.redis.quotaCount(keys.minuteKey, keys.dayKey, points, keys.minuteSec, keys.daySec));
    if (counted.outcome !== 'counted') throw new Error(`quotaCount answered ${counted.outcome}`);
    return counted;
  }

  async countBehind(gate: QuotaGate, keys: QuotaKeys, points: number): Promise<WindowsCounted | GateRefusal> {
    const { minuteKey, dayKey, minuteSec, daySec } = keys;
    return read(await this.redis.quotaCountBehindGate(minuteKey, dayKey, gate.failureKey, gate.versionKey, points, minuteSec, daySec, gate.lockoutAt, gate.version));
  }
}
