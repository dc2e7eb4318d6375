import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAccount, findAccount, type Account } from '../../src/shared/repositories/accounts.js';
import { verifySessionToken } from '../../src/shared/access/session-token.js';
import { databaseUrl } from '../support/services.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI_SESSION_SECRET = 'cli-test-session-secret-0123456789abcdef';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the operator CLI as a separate process, the way operators and scripts do (docs/contracts.md#operator-cli):
 * `npm run --silent admin -- ...` or `npx tsx src/cli/admin.ts ...`.
 */
function runCli(env: NodeJS.ProcessEnv, args: string[], via: 'npm' | 'npx' = 'npx'): Promise<CliRun> {
  const [command, prefix] = via === 'npm' ? ['npm', ['run', '--silent', 'admin', '--']] : ['npx', ['tsx', 'src/cli/admin.ts']];
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...(prefix), ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The contract is exactly one JSON object on stdout: JSON.parse rejects a second value or a banner. */
function parseOutput(run: CliRun): Record<string, unknown> {
  expect(run.code, run.stderr).toBe(0);
  const output: unknown = JSON.parse(run.stdout);
  expect(output).toBeTypeOf('object');
  expect(Array.isArray(output)).toBe(false);
  return output as Record<string, unknown>;
}

describe('operator CLI (admin)', () => {
  const database = `${inject('runId')}_cli_${randomBytes(4).toString('hex')}`;
  const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
  let sql: postgres.Sql;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    await admin.unsafe(`create database "${database}" template "${inject('templateDatabase')}"`);
    const url = databaseUrl(inject('postgresUrl'), database);
    sql = postgres(url, { max: 2, onnotice: () => {} });
    env = { ...process.env, DATABASE_URL: url, SESSION_SECRET: CLI_SESSION_SECRET, LOG_LEVEL: 'silent' };
  });
  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
  });

  async function insertAccount(tier: string): Promise<Account> {
    return createAccount(sql, { displayName: `Seeded ${randomBytes(3).toString('hex')}`, tier, isOwner: false, hasCompletedOnboarding: false, avatarUrl: null });
  }

  describe('accounts create', () => {
    it('prints one JSON object with the new account and a session token for it, and stores the flags', async () => {
      const run = await runCli(
        env,
        ['accounts', 'create', '--name', 'Acme Prints', '--tier', 'enterprise', '--owner', '--onboarded', '--avatar-url', 'https://x.test/a.png'],
        'npm',
      );
      const output = parseOutput(run);
      expect(output).toEqual({
        id: expect.stringMatching(UUID),
        display_name: 'Acme Prints',
        subscription_tier: 'enterprise',
        session_token: expect.any(String),
      });

      const row = await findAccount(sql, output.id as string);
      expect(row).toEqual({
        id: output.id,
        displayName: 'Acme Prints',
        subscriptionTier: 'enterprise',
        isOwner: true,
        hasCompletedOnboarding: true,
        avatarUrl: 'https://x.test/a.png',
      });
      expect(await verifySessionToken(output.session_token as string, CLI_SESSION_SECRET, 604_800)).toEqual({ ok: true, accountId: output.id });
    });
  });

  describe('accounts set-tier', () => {
    it('changes that account tier only and prints {id, subscription_tier}', async () => {
      const account = await insertAccount('pro');
      const bystander = await insertAccount('pro');

      const output = parseOutput(await runCli(env, ['accounts', 'set-tier', account.id, 'global']));

      expect(output).toEqual({ id: account.id, subscription_tier: 'global' });
      expect((await findAccount(sql, account.id))?.subscriptionTier).toBe('global');
      expect((await findAccount(sql, bystander.id))?.subscriptionTier).toBe('pro');
    });
  });

  describe('sessions create', () => {
    it('prints a session token for the account that expires --ttl-sec seconds after it is issued', async () => {
      const account = await insertAccount('enterprise');
      const before = Math.floor(Date.now() / 1000);
      const output = parseOutput(await runCli(env, ['sessions', 'create', account.id, '--ttl-sec', '60']));
      const after = Math.ceil(Date.now() / 1000);

      expect(output).toEqual({ session_token: expect.any(String) });
      const token = output.session_token as string;
      expect(await verifySessionToken(token, CLI_SESSION_SECRET, 604_800)).toEqual({ ok: true, accountId: account.id });
      const claims = decodeJwt(token);
      expect(claims.sub).toBe(account.id);
      expect(claims.exp! - claims.iat!).toBe(60);
      expect(claims.exp).toBeGreaterThanOrEqual(before + 60);
      expect(claims.exp).toBeLessThanOrEqual(after + 60);
    });
  });

  describe('keys list', () => {
    it('prints the account\'s keys newest first with their status, end and addresses, never a key or its hash; --status filters', async () => {
      const account = await insertAccount('enterprise');
      const other = await insertAccount('enterprise');
      const insertKey = async (accountId: string, label: string, extra: { expiresAt?: string; revoked?: boolean; allowedIps?: string[] } = {}) => {
        const [row] = await sql<{ id: string }[]>`
          insert into api_keys (account_id, label, key_prefix, key_hash, scopes, expires_at, allowed_ips, is_revoked, revoked_at, created_at)
          values (${accountId}, ${label}, ${randomBytes(4).toString('hex')}, ${randomBytes(32)}, ${['listings:write']},
                  ${extra.expiresAt ?? null}, ${extra.allowedIps ?? null}, ${extra.revoked ?? false}, ${extra.revoked ? new Date() : null},
                  now() - make_interval(secs => ${label.length}))
          returning id`;
        return row!.id;
      };
      // note: created_at by label length, so the order is known: 'active' newest, 'revoked-key' oldest.
      const active = await insertKey(account.id, 'active', { allowedIps: ['203.0.113.0/24'] });
      const expired = await insertKey(account.id, 'expired1', { expiresAt: '2020-01-01T00:00:00Z' });
      const revoked = await insertKey(account.id, 'revoked-key', { revoked: true });
      await insertKey(other.id, 'not theirs');

      const output = parseOutput(await runCli(env, ['keys', 'list', account.id]));
      expect(output).toMatchObject({ account_id: account.id, has_more: false });
      const keys = output.keys as Record<string, unknown>[];
      expect(keys.map((k) => [k.id, k.status])).toEqual([
        [active, 'active'],
        [expired, 'expired'],
        [revoked, 'revoked'],
      ]);
      expect(Object.keys(keys[0]!).sort()).toEqual(['allowed_ips', 'created_at', 'expires_at', 'id', 'key_prefix', 'label', 'last_used_at', 'scopes', 'status']);
      expect(keys[0]).toMatchObject({ allowed_ips: ['203.0.113.0/24'], expires_at: null });
      expect(keys[1]).toMatchObject({ expires_at: '2020-01-01T00:00:00.000Z' });

      const onlyExpired = parseOutput(await runCli(env, ['keys', 'list', account.id, '--status', 'expired']));
      expect((onlyExpired.keys as { id: string }[]).map((k) => k.id)).toEqual([expired]);
      const firstPage = parseOutput(await runCli(env, ['keys', 'list', account.id, '--limit', '1']));
      expect([(firstPage.keys as { id: string }[]).map((k) => k.id), firstPage.has_more]).toEqual([[active], true]);
    });
  });

  describe('errors: non-zero exit, nothing on stdout, a message on stderr', () => {
    let accountsBefore: number;
    let known: Account;

    beforeAll(async () => {
      known = await insertAccount('pro');
      [{ count: accountsBefore }] = await sql<[{ count: number }]>`select count(*)::int as count from accounts`;
    });

    // note: concurrent because each run is a separate process costing about a second.
    it.concurrent.for([
      { case: 'an unknown command', args: () => ['accounts', 'delete', known.id], stderr: /unknown command/ },
      { case: 'accounts create without --name', args: () => ['accounts', 'create', '--tier', 'enterprise'], stderr: /--name/ },
      { case: 'accounts create with a tier not in lowercase', args: () => ['accounts', 'create', '--name', 'Bad Tier Co', '--tier', 'Enterprise'], stderr: /tier/ },
      { case: 'set-tier with an id that is not a UUID', args: () => ['accounts', 'set-tier', 'not-a-uuid', 'global'], stderr: /UUID/ },
      { case: 'set-tier for an unknown account', args: () => ['accounts', 'set-tier', randomUUID(), 'global'], stderr: /no account/ },
      { case: 'keys list for an unknown account', args: () => ['keys', 'list', randomUUID()], stderr: /no account/ },
      { case: 'keys list with an unknown --status', args: () => ['keys', 'list', known.id, '--status', 'rolled'], stderr: /--status must be one of all, active, expired, revoked/ },
      { case: 'keys list with --limit 0', args: () => ['keys', 'list', known.id, '--limit', '0'], stderr: /--limit/ },
      { case: 'sessions create for an unknown account', args: () => ['sessions', 'create', randomUUID()], stderr: /no account/ },
      { case: 'sessions create with a --ttl-sec that is not positive', args: () => ['sessions', 'create', known.id, '--ttl-sec', '0'], stderr: /ttl-sec/ },
      {
        case: 'sessions create with a --ttl-sec over SESSION_MAX_TTL_SEC (7 days)',
        args: () => ['sessions', 'create', known.id, '--ttl-sec', String(604_801)],
        stderr: /--ttl-sec must be at most 604800 \(SESSION_MAX_TTL_SEC\)/,
      },
      {
        case: 'sessions create with a 100-year --ttl-sec',
        args: () => ['sessions', 'create', known.id, '--ttl-sec', String(100 * 365 * 86_400)],
        stderr: /SESSION_MAX_TTL_SEC/,
      },
    ])('$case', async ({ args, stderr }, { expect }) => {
      const run = await runCli(env, args());
      expect(run.code).not.toBe(0);
      expect(run.code).not.toBeNull();
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(stderr);
    });

    it('leaves the accounts as they were', async () => {
      const [{ count }] = await sql<[{ count: number }]>`select count(*)::int as count from accounts`;
      expect(count).toBe(accountsBefore);
      expect((await findAccount(sql, known.id))?.subscriptionTier).toBe('pro');
    });
  });
});
