import { createHash, randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { keysMatching } from '../support/test-redis.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

interface CreatedKey {
  key: string;
  metadata: { id: string; key_prefix: string };
}

interface Exchange {
  label: string;
  res: LightMyRequestResponse;
}

/** Everything that would let someone use or recognise a key: the key, its secret part and its hashes. */
function keyForms(fullKey: string): string[] {
  const hash = createHash('sha256').update(fullKey).digest();
  return [fullKey, fullKey.slice(18), hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')];
}

function sessionForms(token: string): string[] {
  return [token, token.split('.')[2]!];
}

/** A response as one searchable text: status line, headers and body. */
function asText(res: LightMyRequestResponse): string {
  return `${res.statusCode}\n${JSON.stringify(res.headers)}\n${res.body}`;
}

function expectNoneIn(text: string, secrets: string[], where: string): void {
  const lower = text.toLowerCase();
  for (const secret of secrets) {
    expect(lower.includes(secret.toLowerCase()), `${where} contains ${secret.slice(0, 12)}...`).toBe(false);
  }
}

describe('secrets and account isolation (API keys, session tokens, /v1/api/*)', () => {
  let service: TestService;
  let a: TestAccount;
  let b: TestAccount;
  let aKey: CreatedKey;
  let aSpare: CreatedKey;
  let bKey: CreatedKey;
  const createResponses: (Exchange & { created: CreatedKey })[] = [];
  const otherResponses: Exchange[] = [];
  const rejectedKeys: string[] = [];

  async function call(label: string, options: InjectOptions): Promise<LightMyRequestResponse> {
    const res = await service.request(options);
    otherResponses.push({ label, res });
    return res;
  }

  async function createKey(account: TestAccount, label: string): Promise<CreatedKey> {
    const res = await service.request({
      method: 'POST',
      url: '/v1/api/keys',
      headers: bearer(account.sessionToken),
      payload: { label, scopes: ['listings:write', 'listings:read'] },
    });
    expect(res.statusCode).toBe(201);
    const created = res.json<CreatedKey>();
    createResponses.push({ label, res, created });
    return created;
  }

  function allKeys(): CreatedKey[] {
    return createResponses.map((c) => c.created);
  }

  function allSecrets(): string[] {
    return [...allKeys().flatMap((k) => keyForms(k.key)), ...sessionForms(a.sessionToken), ...sessionForms(b.sessionToken)];
  }

  beforeAll(async () => {
    service = await startTestService();
    a = await service.createAccount({ name: 'Account A' });
    b = await service.createAccount({ name: 'Account B' });
    aKey = await createKey(a, 'A main');
    aSpare = await createKey(a, 'A spare');
    bKey = await createKey(b, 'B main');

    // A partner's ordinary day, plus its mistakes, plus attempts on the other account.
    const failIp = '192.0.2.77';
    await call('me A', { method: 'GET', url: '/v1/api/me', headers: bearer(aKey.key) });
    await call('me B', { method: 'GET', url: '/v1/api/me', headers: bearer(bKey.key) });
    const listings = {
      listings: [validListing({ account_id: b.id, maker_name: 'B', import_job_id: 'forged' }), validListing({ currency: 'EUR' })],
    };
    await call('listings A', { method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(aKey.key), payload: listings });
    const idem = { ...bearer(aKey.key), 'idempotency-key': 'secrets-run' };
    await call('listings A idem', { method: 'POST', url: '/v1/api/listings/bulk', headers: idem, payload: listings });
    await call('listings A replay', { method: 'POST', url: '/v1/api/listings/bulk', headers: idem, payload: listings });
    await call('listings A 400', { method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(aKey.key), payload: { listings: [{}] } });
    await call('machines A', {
      method: 'POST',
      url: '/v1/api/machines/bulk',
      headers: bearer(aKey.key),
      payload: { machines: [validMachine({ account_id: b.id }), validMachine({ model: '' })] },
    });
    await call('keys A', { method: 'GET', url: '/v1/api/keys', headers: bearer(a.sessionToken) });
    await call('keys B', { method: 'GET', url: '/v1/api/keys', headers: bearer(b.sessionToken) });
    await call('revoke A spare', { method: 'DELETE', url: `/v1/api/keys/${aSpare.metadata.id}`, headers: bearer(a.sessionToken) });
    await call('revoked key', { method: 'GET', url: '/v1/api/me', headers: bearer(aSpare.key), remoteAddress: failIp });

    // Wrong keys: another secret under A's prefix, a typo, a truncated key.
    const wrong = `svc_live_${aKey.metadata.key_prefix}_${randomBytes(16).toString('hex')}`;
    rejectedKeys.push(wrong, `${aKey.key}0`, aKey.key.slice(0, -1));
    for (const key of rejectedKeys) {
      await call(`wrong key ${key.length}`, { method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: failIp });
      await call(`wrong key bulk ${key.length}`, {
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: bearer(key),
        payload: listings,
        remoteAddress: failIp,
      });
    }
    // Secrets in the wrong place.
    const [head, payload] = a.sessionToken.split('.');
    const tampered = `${head}.${payload}.${randomBytes(32).toString('base64url')}`;
    await call('tampered session', { method: 'GET', url: '/v1/api/keys', headers: bearer(tampered), remoteAddress: failIp });
    await call('key as session', { method: 'GET', url: '/v1/api/keys', headers: bearer(aKey.key), remoteAddress: failIp });
    await call('session as key', { method: 'GET', url: '/v1/api/me', headers: bearer(a.sessionToken), remoteAddress: failIp });
  });
  afterAll(async () => {
    await service?.close();
  });

  describe('isolation', () => {
    it("does not let A's session revoke B's key: 404, and B's key keeps working", async () => {
      const res = await call('A revokes B', { method: 'DELETE', url: `/v1/api/keys/${bKey.metadata.id}`, headers: bearer(a.sessionToken) });

      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'API key not found', code: 'api_key_not_found' });
      const [row] = await service.sql<{ is_revoked: boolean }[]>`select is_revoked from api_keys where id = ${bKey.metadata.id}`;
      expect(row?.is_revoked).toBe(false);
      const me = await call('me B after', { method: 'GET', url: '/v1/api/me', headers: bearer(bKey.key) });
      expect(me.statusCode).toBe(200);
    });

    it("does not let A's API key revoke B's key (API keys cannot manage keys): 401, B's key keeps working", async () => {
      const res = await call('A key revokes B', {
        method: 'DELETE',
        url: `/v1/api/keys/${bKey.metadata.id}`,
        headers: bearer(aKey.key),
        remoteAddress: '192.0.2.78',
      });

      expect(res.statusCode).toBe(401);
      const me = await call('me B after key attempt', { method: 'GET', url: '/v1/api/me', headers: bearer(bKey.key) });
      expect(me.statusCode).toBe(200);
    });

    it("does not list A's keys to B", async () => {
      const res = await call('keys B again', { method: 'GET', url: '/v1/api/keys', headers: bearer(b.sessionToken) });

      expect(res.json<{ keys: { id: string }[] }>().keys.map((k) => k.id)).toEqual([bKey.metadata.id]);
    });

    it("writes the rows imported with A's key to A only, whatever account fields the rows carry", async () => {
      const rows = await service.sql<{ table: string; account_id: string; n: number }[]>`
        select 'listings' as table, account_id, count(*)::int as n from listings group by account_id
        union all
        select 'machines', account_id, count(*)::int from machines group by account_id
        union all
        select 'imports', account_id, count(*)::int from imports group by account_id
        order by 1`;

      expect(rows).toEqual([
        { table: 'imports', account_id: a.id, n: 3 },
        { table: 'listings', account_id: a.id, n: 2 },
        { table: 'machines', account_id: a.id, n: 1 },
      ]);
      const forged = await service.sql`select 1 from listings where maker_name = 'B' or import_job_id = 'forged'`;
      expect(forged).toHaveLength(0);
    });

    it("shows B's /me as B's own account and key", async () => {
      const res = await call('me B again', { method: 'GET', url: '/v1/api/me', headers: bearer(bKey.key) });

      expect(res.json()).toMatchObject({ id: b.id, display_name: 'Account B', key: { prefix: bKey.metadata.key_prefix } });
    });
  });

  describe('logs', () => {
    it('contain no full key, secret part or SHA-256 of any key, and no session token', () => {
      const raw = service.rawLogs();
      expect(raw.length).toBeGreaterThan(0);
      expectNoneIn(raw, allSecrets(), 'the log output');
    });

    it('contain no rejected key either (a typo of a real key is as secret as the key)', () => {
      expectNoneIn(service.rawLogs(), rejectedKeys.flatMap(keyForms), 'the log output');
    });

    it('contain no key that a partner put in the query string by mistake', async () => {
      const key = await createKey(a, 'pasted into a URL');
      const res = await service.request({ method: 'GET', url: `/v1/api/me?api_key=${key.key}`, remoteAddress: '192.0.2.79' });
      expect(res.statusCode).toBe(401);

      expectNoneIn(service.rawLogs(), [key.key, key.key.slice(18)], 'the log output');
    });

    it('were written for these requests (the search above looked at real output)', () => {
      const lines = service.logs.filter((line) => typeof line.msg === 'string');
      expect(lines.length).toBeGreaterThanOrEqual(otherResponses.length);
      expect(lines.some((line) => line.msg === 'import written')).toBe(true);
    });
  });

  describe('responses', () => {
    it('show each full key in its create response only', () => {
      expect(allKeys().length).toBeGreaterThanOrEqual(3);
      for (const { created } of createResponses) {
        const others = createResponses.filter((c) => c.created !== created).map((c) => asText(c.res)).join('\n');
        expectNoneIn(others, [created.key, created.key.slice(18)], 'another create response');
      }
      for (const { label, res } of otherResponses) {
        expectNoneIn(asText(res), allKeys().flatMap((k) => [k.key, k.key.slice(18)]), `the response "${label}"`);
      }
    });

    it('never carry a key hash or a session token, the create responses included', () => {
      const hashesAndSessions = [
        ...allKeys().flatMap((k) => keyForms(k.key).slice(2)),
        ...sessionForms(a.sessionToken),
        ...sessionForms(b.sessionToken),
      ];
      for (const { label, res } of [...createResponses, ...otherResponses]) {
        expectNoneIn(asText(res), hashesAndSessions, `the response "${label}"`);
      }
    });

    it('were what the scenario intended (so the search covered real successes and failures)', () => {
      const status = Object.fromEntries(otherResponses.map(({ label, res }) => [label, res.statusCode]));
      expect(status).toMatchObject({
        'me A': 200,
        'me B': 200,
        'listings A': 201,
        'listings A idem': 201,
        'listings A replay': 201,
        'listings A 400': 400,
        'machines A': 201,
        'keys A': 200,
        'keys B': 200,
        'revoke A spare': 200,
        'revoked key': 401,
        'tampered session': 401,
        'key as session': 401,
        'session as key': 401,
      });
      expect(otherResponses.filter(({ label }) => label.startsWith('wrong key')).map(({ res }) => res.statusCode)).toEqual(Array(6).fill(401));
    });
  });

  describe('storage', () => {
    async function tableTexts(): Promise<Map<string, string>> {
      const tables = await service.sql<{ table_name: string }[]>`
        select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`;
      const texts = new Map<string, string>();
      for (const { table_name } of tables) {
        const rows = await service.sql<{ row: string }[]>`select t::text as row from ${service.sql(table_name)} t`;
        texts.set(table_name, rows.map((r) => r.row).join('\n'));
      }
      return texts;
    }

    it('holds no full key, secret part or session token in any column of any table', async () => {
      const texts = await tableTexts();
      expect([...texts.keys()]).toEqual(expect.arrayContaining(['accounts', 'api_keys', 'idempotency_keys', 'imports', 'listings', 'machines']));
      expect(texts.get('api_keys')!.split('\n')).toHaveLength(createResponses.length);
      const secrets = [...allKeys().flatMap((k) => [k.key, k.key.slice(18)]), ...rejectedKeys, ...sessionForms(a.sessionToken), ...sessionForms(b.sessionToken)];
      for (const [table, text] of texts) expectNoneIn(text, secrets, `table ${table}`);
    });

    it('holds a key hash in api_keys.key_hash only', async () => {
      const texts = await tableTexts();
      const hashes = allKeys().map((k) => createHash('sha256').update(k.key).digest('hex'));
      for (const [table, text] of texts) {
        if (table !== 'api_keys') expectNoneIn(text, hashes, `table ${table}`);
      }
      const [stored] = await service.sql<{ hex: string }[]>`select encode(key_hash, 'hex') as hex from api_keys where id = ${aKey.metadata.id}`;
      expect(stored?.hex).toBe(hashes[0]);
    });

    it('keeps every key and session secret out of Redis (queue jobs, limits, lockouts)', async () => {
      const redis = service.deps.redis;
      const keys = await keysMatching(redis, `${service.config.redisPrefix}*`);
      const values: string[] = [];
      for (const key of keys) {
        const type = await redis.type(key);
        if (type === 'string') values.push((await redis.get(key)) ?? '');
        else if (type === 'hash') values.push(JSON.stringify(await redis.hgetall(key)));
        else if (type === 'list') values.push(JSON.stringify(await redis.lrange(key, 0, -1)));
        else if (type === 'set') values.push(JSON.stringify(await redis.smembers(key)));
        else if (type === 'zset') values.push(JSON.stringify(await redis.zrange(key, '0', '-1')));
        else if (type === 'stream') values.push(JSON.stringify(await redis.xrange(key, '-', '+')));
      }
      // The completed import jobs are there, so the search looked at job data. (Their rows were
      // deleted once written.)
      expect(values.join('\n')).toContain('\\"rowCount\\":');
      expectNoneIn(`${keys.join('\n')}\n${values.join('\n')}`, [...allSecrets(), ...rejectedKeys], 'Redis');
    });
  });

});
