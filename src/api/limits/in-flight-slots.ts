import { randomUUID } from 'node:crypto';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { RedisClient } from '../../shared/infra/redis.js';

/**
 * Takes a slot when fewer than ARGV[2] unexpired ones are held. A slot is a member of the
 * account's sorted set scored by when its lease ends, on Redis's clock (TIME), so the replicas'
 * clocks do not matter; expired leases (a replica that died) are dropped first.
 */
const ACQUIRE = `
local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** Extends the lease of a slot still held (XX: a slot already dropped is not brought back). */
const RENEW = `
local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

type ScriptClient = RedisClient & {
  inFlightAcquire(key: string, member: string, max: number, leaseMs: number): Promise<number>;
  inFlightRenew(key: string, member: string, leaseMs: number): Promise<number>;
};

export interface InFlightSlot {
  /** the handler has taken over the slot: it releases it when the import ends */
  handlerStarted: boolean;
  /** gives the slot back; safe to call more than once */
  release(): void;
}

export interface InFlightOptions {
  /** how long a slot outlives the last renewal of its holder */
  leaseMs: number;
  /** how often a replica renews the slots it holds */
  renewEveryMs: number;
  /**
   * the longest a request can hold a slot (its body, its import, and a job answered 504 watched
   * to its end); a slot still held then is a leak, released at the next renewal
   */
  maxHoldMs?: number;
}

/** note: a slot held by a replica that died frees itself within LEASE_MS (docs/access.md#in-flight-cap). */
const DEFAULTS: InFlightOptions = { leaseMs: 45_000, renewEveryMs: 15_000 };

/**
 * The bulk imports each account has in flight, across all API replicas (docs/access.md#in-flight-cap): at most
 * `max` at once. Counted in Redis under the prefix; each replica renews the leases of the slots
 * it holds, so a replica that dies without releasing them frees them when their leases end.
 */
export class AccountInFlight {
  /** the slots this replica holds: member -> its key, and when it was taken */
  private readonly held = new Map<string, { key: string; takenAt: number; release: () => void }>();
  private readonly renewal: NodeJS.Timeout;
  private readonly redis: ScriptClient;
  private readonly options: InFlightOptions;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly max: number,
    private readonly log: Logger,
    settings: Partial<InFlightOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...settings };
    redis.defineCommand('inFlightAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    redis.defineCommand('inFlightRenew', { numberOfKeys: 1, lua: RENEW });
    this.redis = redis as ScriptClient;
    this.renewal = setInterval(() => this.renewAll(), this.options.renewEveryMs);
    this.renewal.unref();
  }

  private key(accountId: string): string {
    return `${this.prefix}:in-flight:${accountId}`;
  }

  /** A slot for one more import of the account, or undefined when it already has `max` in flight. */
  async tryAcquire(accountId: string): Promise<InFlightSlot | undefined> {
    const key = this.key(accountId);
    const member = randomUUID();
    let taken: number;
    try {
      taken = await this.redis.inFlightAcquire(key, member, this.max, this.options.leaseMs);
    } catch {
      throw apiErrors.serviceUnavailable();
    }
    if (taken !== 1) return undefined;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.held.delete(member);
      // note: not awaited; a slot whose release is lost frees itself when its lease ends.
      this.redis.zrem(key, member).catch((err: unknown) => this.log.warn({ err }, 'could not release an in-flight slot; its lease ends it'));
    };
    this.held.set(member, { key, takenAt: Date.now(), release });
    return { handlerStarted: false, release };
  }

  private renewAll(): void {
    const { maxHoldMs } = this.options;
    for (const [member, { key, takenAt, release }] of this.held) {
      if (maxHoldMs !== undefined && Date.now() - takenAt > maxHoldMs) {
        // note: no request holds a slot this long; one that does was lost track of (a bug), and
        // would otherwise take one of its account's imports away for as long as this process lives.
        this.log.error({ accountSlotKey: key, heldMs: Date.now() - takenAt }, 'an in-flight slot outlived any import it could belong to; released');
        release();
        continue;
      }
      this.redis.inFlightRenew(key, member, this.options.leaseMs).catch((err: unknown) => this.log.warn({ err }, 'could not renew an in-flight slot'));
    }
  }

  /** Stops renewing; the slots still held are released by their requests or end with their leases. */
  close(): void {
    clearInterval(this.renewal);
  }
}
