import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../shared/infra/config.js';
import { AuthVersion } from '../shared/access/auth-version.js';
import { createSql, type Sql } from '../shared/infra/db.js';
import { createRedis, waitForRedis } from '../shared/infra/redis.js';
import { createAccount, isUuid, setAccountTier } from '../shared/repositories/accounts.js';
import { signSessionToken } from '../shared/access/session-token.js';
import { KEY_LIST_LIMIT, KEY_PAGE_MAX, KEY_STATUSES, listKeys, type KeyStatus } from '../shared/repositories/api-keys.js';

/**
 * Operator CLI (docs/contracts.md#operator-cli): each command prints exactly one JSON object on stdout and exits 0,
 * or prints an error on stderr and exits non-zero.
 */

const DEFAULT_SESSION_TTL_SEC = 24 * 60 * 60;
const TIER_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;

const USAGE = `usage:
  admin accounts create --name NAME --tier TIER [--owner] [--onboarded] [--avatar-url URL]
  admin accounts set-tier ACCOUNT_ID TIER
  admin sessions create ACCOUNT_ID [--ttl-sec N]
  admin keys list ACCOUNT_ID [--status active|expired|revoked|all] [--limit N] [--starting-after KEY_ID]`;

class UsageError extends Error {}

function requireTier(tier: string | undefined): string {
  if (tier === undefined || !TIER_PATTERN.test(tier)) {
    throw new UsageError(`tier must be a lowercase word such as enterprise, global, pro or free (got ${JSON.stringify(tier)})`);
  }
  return tier;
}

function requireAccountId(id: string | undefined): string {
  if (id === undefined || !isUuid(id)) throw new UsageError(`account id must be a UUID (got ${JSON.stringify(id)})`);
  return id;
}

async function accountsCreate(sql: Sql, config: Config, args: string[]): Promise<object> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      tier: { type: 'string' },
      owner: { type: 'boolean', default: false },
      onboarded: { type: 'boolean', default: false },
      'avatar-url': { type: 'string' },
    },
  });
  const name = values.name?.trim();
  if (!name) throw new UsageError('--name is required');
  const account = await createAccount(sql, {
    displayName: name,
    tier: requireTier(values.tier),
    isOwner: values.owner,
    hasCompletedOnboarding: values.onboarded,
    avatarUrl: values['avatar-url'] ?? null,
  });
  return {
    id: account.id,
    display_name: account.displayName,
    subscription_tier: account.subscriptionTier,
    session_token: await signSessionToken(account.id, config.sessionSecret, DEFAULT_SESSION_TTL_SEC),
  };
}

async function accountsSetTier(sql: Sql, config: Config, args: string[]): Promise<object> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const id = requireAccountId(positionals[0]);
  const tier = requireTier(positionals[1]);
  const account = await setAccountTier(sql, id, tier);
  if (!account) throw new Error(`no account with id ${id}`);
  // The API replicas cache keys with their account's tier; bumping the auth version makes the
  // new tier apply from the very next request.
  const redis = createRedis(config, 'command');
  try {
    await waitForRedis(redis, 5_000);
    await new AuthVersion(redis, config.redisPrefix).bump();
  } catch (error) {
    throw new Error(
      `tier changed in the database, but the API could not be told (${(error as Error).message}); it applies within 30 s`,
      { cause: error },
    );
  } finally {
    redis.disconnect();
  }
  return { id: account.id, subscription_tier: account.subscriptionTier };
}

async function sessionsCreate(sql: Sql, config: Config, args: string[]): Promise<object> {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { 'ttl-sec': { type: 'string' } } });
  const id = requireAccountId(positionals[0]);
  const ttl = values['ttl-sec'] === undefined ? DEFAULT_SESSION_TTL_SEC : Number(values['ttl-sec']);
  if (!Number.isInteger(ttl) || ttl <= 0) throw new UsageError('--ttl-sec must be a positive whole number of seconds');
  if (ttl > config.sessionMaxTtlSec) {
    throw new UsageError(`--ttl-sec must be at most ${config.sessionMaxTtlSec} (SESSION_MAX_TTL_SEC): the API refuses longer-lived session tokens`);
  }
  const [found] = await sql`select 1 from accounts where id = ${id}`;
  if (!found) throw new Error(`no account with id ${id}`);
  return { session_token: await signSessionToken(id, config.sessionSecret, ttl) };
}

/**
 * An account's keys, newest first, with their status (docs/operators.md#operator-cli): what a
 * security review asks for ("which keys does this partner hold, which end when, from where"),
 * without a session token. Never a key or its hash: the list the partner sees.
 */
async function keysList(sql: Sql, args: string[]): Promise<object> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: { status: { type: 'string', default: 'all' }, limit: { type: 'string' }, 'starting-after': { type: 'string' } },
  });
  const id = requireAccountId(positionals[0]);
  const status = values.status;
  if (!(KEY_STATUSES as readonly string[]).includes(status)) throw new UsageError(`--status must be one of ${KEY_STATUSES.join(', ')} (got ${JSON.stringify(status)})`);
  const limit = values.limit === undefined ? KEY_LIST_LIMIT : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > KEY_PAGE_MAX) throw new UsageError(`--limit must be a whole number from 1 to ${KEY_PAGE_MAX}`);
  const startingAfter = values['starting-after'];
  if (startingAfter !== undefined && !isUuid(startingAfter)) throw new UsageError(`--starting-after must be a key id (got ${JSON.stringify(startingAfter)})`);
  const [found] = await sql`select 1 from accounts where id = ${id}`;
  if (!found) throw new Error(`no account with id ${id}`);
  const page = await listKeys(sql, id, { limit, status: status as KeyStatus, ...(startingAfter === undefined ? {} : { startingAfter }) });
  if (!page) throw new Error(`no key with id ${startingAfter} on account ${id}`);
  return {
    account_id: id,
    keys: page.keys.map((k) => ({
      id: k.id,
      label: k.label,
      key_prefix: k.keyPrefix,
      scopes: k.scopes,
      status: k.status,
      expires_at: k.expiresAt,
      allowed_ips: k.allowedIps,
      last_used_at: k.lastUsedAt,
      created_at: k.createdAt,
    })),
    has_more: page.hasMore,
  };
}

async function run(argv: string[]): Promise<object> {
  const [group, command, ...rest] = argv;
  const config = loadConfig();
  const sql = createSql(config, { max: 1 });
  try {
    if (group === 'accounts' && command === 'create') return await accountsCreate(sql, config, rest);
    if (group === 'accounts' && command === 'set-tier') return await accountsSetTier(sql, config, rest);
    if (group === 'sessions' && command === 'create') return await sessionsCreate(sql, config, rest);
    if (group === 'keys' && command === 'list') return await keysList(sql, rest);
    throw new UsageError(`unknown command: ${[group, command].filter(Boolean).join(' ') || '(none)'}`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

try {
  const output = await run(process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(output)}\n`);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${message}\n${error instanceof UsageError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? `${USAGE}\n` : ''}`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
