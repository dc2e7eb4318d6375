import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * Expiry, rolling and changing keys (docs/access.md#key-lifecycle): what the key routes answer,
 * what the list and /me show, and what a key that ended gets. Allowed addresses at the door are
 * in key-allowed-ips.test.ts, two replicas in key-lifecycle-replicas.test.ts.
 */

const EXPIRED = { error: 'Invalid API key', code: 'api_key_expired' };
const NOT_FOUND = { error: 'API key not found', code: 'api_key_not_found' };
const NOT_ROLLABLE = { error: 'API key cannot be rolled: it is revoked, expired or already rolled', code: 'api_key_not_rollable' };
const ENDED = { error: 'API key is revoked or expired', code: 'api_key_ended' };
const DAY_MS = 86_400_000;

interface Created {
  key: string;
  metadata: { id: string; label: string; key_prefix: string; scopes: string[]; created_at: string };
  note: string;
  expires_at: string | null;
  allowed_ips: string[] | null;
}
interface Rolled extends Created {
  rolled: { id: string; key_prefix: string; expires_at: string };
}
interface KeyRecord {
  id: string;
  label: string;
  status: string;
  is_revoked: boolean;
  expires_at: string | null;
  allowed_ips: string[] | null;
  scopes: string[];
}

let ipCounter = 0;
/** A distinct client address per request that fails, so no test adds up to an IP lockout. */
function freshIp(): string {
  ipCounter += 1;
  return `10.34.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

const inDays = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString();

function create(account: TestAccount, payload: object) {
  return service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload });
}
async function created(account: TestAccount, extra: object = {}): Promise<Created> {
  const res = await create(account, { label: 'sync', scopes: ['listings:write'], ...extra });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<Created>();
}
/** `count` keys of the account, labelled k0, k1, ... */
async function keysOf(account: TestAccount, count: number): Promise<Created[]> {
  const keys: Created[] = [];
  for (let i = 0; i < count; i += 1) keys.push(await created(account, { label: `k${i}` }));
  return keys;
}
function roll(account: TestAccount, id: string, payload?: object) {
  return service.request({ method: 'POST', url: `/v1/api/keys/${id}/roll`, headers: bearer(account.sessionToken), ...(payload === undefined ? {} : { payload }) });
}
function change(account: TestAccount, id: string, payload: unknown) {
  return service.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken), payload: payload as object });
}
function me(key: string, remoteAddress = freshIp()) {
  return service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress });
}
async function listed(account: TestAccount, query = ''): Promise<KeyRecord[]> {
  const res = await service.request({ method: 'GET', url: `/v1/api/keys${query}`, headers: bearer(account.sessionToken) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ keys: KeyRecord[] }>().keys;
}
/** Ends a key now, in the table, as the clock would: no waiting in a test. */
async function expireInTable(id: string): Promise<void> {
  await service.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${id}`;
}

describe('POST /v1/api/keys with expires_at', () => {
  it('shows expires_at beside key, metadata and note, and keeps metadata to its five fields', async () => {
    const account = await service.createAccount();
    const expiresAt = inDays(90);
    const body = await created(account, { expires_at: expiresAt });
    expect(new Date(body.expires_at!).getTime()).toBe(new Date(expiresAt).getTime());
    expect(body.allowed_ips).toBeNull();
    expect(Object.keys(body.metadata).sort()).toEqual(['created_at', 'id', 'key_prefix', 'label', 'scopes']);
    const [record] = await listed(account);
    expect(record).toMatchObject({ status: 'active', allowed_ips: null });
    expect(new Date(record!.expires_at!).getTime()).toBe(new Date(expiresAt).getTime());
    const whoAmI = await me(body.key);
    expect(whoAmI.statusCode).toBe(200);
    expect(new Date(whoAmI.json<{ key: { expires_at: string } }>().key.expires_at).getTime()).toBe(new Date(expiresAt).getTime());
  });

  it('takes an offset other than Z and stores the same instant', async () => {
    const account = await service.createAccount();
    const at = new Date(Date.now() + 10 * DAY_MS);
    at.setUTCMilliseconds(0);
    const local = new Date(at.getTime() + 2 * 3_600_000).toISOString().replace('.000Z', '+02:00');
    const body = await created(account, { expires_at: local });
    expect(new Date(body.expires_at!).getTime()).toBe(at.getTime());
  });

  it.each([
    ['in the past', () => new Date(Date.now() - 1_000).toISOString()],
    ['30 seconds ahead', () => new Date(Date.now() + 30_000).toISOString()],
    ['1,097 days ahead', () => inDays(1_097)],
    ['without a zone', () => inDays(10).replace('Z', '')],
    ['a date only', () => inDays(10).slice(0, 10)],
    ['not a date', () => 'next tuesday'],
    ['a number', () => Date.now() + DAY_MS],
  ])('answers expires_at %s with 400 naming expires_at', async (_, value) => {
    const account = await service.createAccount();
    const res = await create(account, { label: 'sync', scopes: ['listings:write'], expires_at: value() });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_key_fields', error: expect.stringMatching(/^expires_at: /) });
    expect(await listed(account)).toEqual([]);
  });

  it('takes 1,095 days ahead', async () => {
    const account = await service.createAccount();
    expect((await create(account, { label: 'sync', scopes: ['listings:write'], expires_at: inDays(1_095) })).statusCode).toBe(201);
  });
});

describe('an expired key', () => {
  it('is refused with 401 api_key_expired from the instant it ends, though the key was cached before', async () => {
    const account = await service.createAccount();
    const body = await created(account, { expires_at: inDays(1) });
    // note: the end is brought near in the table before the key is first used, so the key the
    // cache then holds carries it; nothing tells the cache when the instant passes.
    const [row] = await service.sql<{ ends: Date }[]>`
      update api_keys set expires_at = now() + interval '1 second' where id = ${body.metadata.id} returning expires_at as ends`;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await me(body.key)).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, row!.ends.getTime() - Date.now() + 20)));
    const refused = await me(body.key);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toEqual(EXPIRED);
    expect(refused.headers['x-ratelimit-remaining-minute']).toBeUndefined();
    expect((await listed(account))[0]).toMatchObject({ status: 'expired', is_revoked: false });
  });

  it('counts as a failed attempt: 20 of them lock the address out, even for a good key', async () => {
    const account = await service.createAccount();
    const good = await created(account);
    const expired = await created(account, { expires_at: inDays(1) });
    await expireInTable(expired.metadata.id);
    const ip = freshIp();
    for (let i = 0; i < 20; i += 1) expect((await me(expired.key, ip)).statusCode).toBe(401);
    expect((await me(good.key, ip)).statusCode).toBe(429);
  });

  it('does not count toward the 20 active keys', async () => {
    const account = await service.createAccount();
    const keys = await keysOf(account, 20);
    expect((await create(account, { label: 'one more', scopes: ['listings:write'] })).statusCode).toBe(429);
    await service.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${keys[0]!.metadata.id}`;
    expect((await create(account, { label: 'one more', scopes: ['listings:write'] })).statusCode).toBe(201);
    expect((await create(account, { label: 'and another', scopes: ['listings:write'] })).statusCode).toBe(429);
  });

  it('holds the cap under 30 concurrent creates when expired and revoked keys are about', async () => {
    const account = await service.createAccount();
    for (let i = 0; i < 5; i += 1) {
      const body = await created(account, { label: `old${i}` });
      if (i % 2 === 0) await expireInTable(body.metadata.id);
      else await service.request({ method: 'DELETE', url: `/v1/api/keys/${body.metadata.id}`, headers: bearer(account.sessionToken) });
    }
    const statuses = (await Promise.all(Array.from({ length: 30 }, (_, i) => create(account, { label: `c${i}`, scopes: ['listings:write'] })))).map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(20);
  });
});

describe('GET /v1/api/keys?status=', () => {
  it('tells active, expired and revoked keys apart', async () => {
    const account = await service.createAccount();
    const active = await created(account, { label: 'active' });
    const expired = await created(account, { label: 'expired', expires_at: inDays(1) });
    const revoked = await created(account, { label: 'revoked' });
    await expireInTable(expired.metadata.id);
    await service.request({ method: 'DELETE', url: `/v1/api/keys/${revoked.metadata.id}`, headers: bearer(account.sessionToken) });
    const ids = (keys: KeyRecord[]) => keys.map((k) => [k.id, k.status]);
    expect(ids(await listed(account, '?status=active'))).toEqual([[active.metadata.id, 'active']]);
    expect(ids(await listed(account, '?status=expired'))).toEqual([[expired.metadata.id, 'expired']]);
    expect(ids(await listed(account, '?status=revoked'))).toEqual([[revoked.metadata.id, 'revoked']]);
    expect((await listed(account)).map((k) => k.status)).toEqual(['revoked', 'expired', 'active']);
  });

  it('reads ?status=active and ?status=expired from the partial index of unrevoked keys', async () => {
    const account = await service.createAccount();
    for (const filter of ['(expires_at is null or expires_at > now())', 'expires_at <= now()']) {
      const plan = await service.sql.begin(async (tx) => {
        await tx`set local enable_seqscan = off`;
        return JSON.stringify(
          await tx.unsafe(
            `explain (format json) select id from api_keys where account_id = $1 and not is_revoked and ${filter} order by created_at desc, id desc limit 51`,
            [account.id],
          ),
        );
      });
      expect(plan).toContain('"Index Name":"api_keys_account_active_idx"');
    }
  });
});

describe('POST /v1/api/keys/{id}/roll', () => {
  it('answers 201 with a new key of the same label, scopes and addresses, and the old key working a day more by default', async () => {
    const account = await service.createAccount();
    const old = await created(account, { label: 'ERP', allowed_ips: ['203.0.113.0/24'] });
    const before = Date.now();
    const res = await roll(account, old.metadata.id);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<Rolled>();
    expect(Object.keys(body).sort()).toEqual(['allowed_ips', 'expires_at', 'key', 'metadata', 'note', 'rolled']);
    expect(body.key).toMatch(/^svc_live_[0-9a-f]{8}_[0-9a-f]{32}$/);
    expect(body.key).not.toBe(old.key);
    expect(body.metadata).toMatchObject({ label: 'ERP', scopes: ['listings_write'] });
    expect(body.metadata.id).not.toBe(old.metadata.id);
    expect(body.expires_at).toBeNull();
    expect(body.allowed_ips).toEqual(['203.0.113.0/24']);
    expect(body.rolled).toMatchObject({ id: old.metadata.id, key_prefix: old.metadata.key_prefix });
    const ends = new Date(body.rolled.expires_at).getTime();
    expect(ends).toBeGreaterThanOrEqual(before + DAY_MS - 2_000);
    expect(ends).toBeLessThanOrEqual(Date.now() + DAY_MS + 2_000);
    // Both keys work meanwhile, from an allowed address.
    expect((await me(old.key, '203.0.113.7')).statusCode).toBe(200);
    expect((await me(body.key, '203.0.113.8')).statusCode).toBe(200);
    const records = await listed(account);
    expect(records.map((k) => [k.id, k.status, k.label])).toEqual([
      [body.metadata.id, 'active', 'ERP'],
      [old.metadata.id, 'active', 'ERP'],
    ]);
  });

  it('with expires_in_sec 0 ends the old key at once: its next request is 401 api_key_expired', async () => {
    const account = await service.createAccount();
    const old = await created(account);
    expect((await me(old.key)).statusCode).toBe(200);
    const res = await roll(account, old.metadata.id, { expires_in_sec: 0 });
    expect(res.statusCode).toBe(201);
    const refused = await me(old.key);
    expect([refused.statusCode, refused.json()]).toEqual([401, EXPIRED]);
    expect((await me(res.json<Rolled>().key)).statusCode).toBe(200);
    expect((await listed(account, '?status=expired')).map((k) => k.id)).toEqual([old.metadata.id]);
  });

  it('ends the old key at its own expires_at when that is earlier than the grace period', async () => {
    const account = await service.createAccount();
    const own = inDays(1);
    const old = await created(account, { expires_at: own });
    const res = await roll(account, old.metadata.id, { expires_in_sec: 604_800 });
    expect(res.statusCode).toBe(201);
    expect(new Date(res.json<Rolled>().rolled.expires_at).getTime()).toBe(new Date(own).getTime());
  });

  it('ends the old key after a short grace period, then refuses it as expired', async () => {
    const account = await service.createAccount();
    const old = await created(account);
    const res = await roll(account, old.metadata.id, { expires_in_sec: 1 });
    expect(res.statusCode).toBe(201);
    expect((await me(old.key)).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, new Date(res.json<Rolled>().rolled.expires_at).getTime() - Date.now() + 50)));
    expect((await me(old.key)).json()).toEqual(EXPIRED);
  });

  it('gives exactly one 201 of 10 concurrent rolls of one key, the others 409', async () => {
    const account = await service.createAccount();
    const old = await created(account);
    const replies = await Promise.all(Array.from({ length: 10 }, () => roll(account, old.metadata.id)));
    const statuses = replies.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, ...Array<number>(9).fill(409)]);
    expect(replies.find((r) => r.statusCode === 409)!.json()).toEqual(NOT_ROLLABLE);
    expect(await listed(account)).toHaveLength(2);
  });

  it('rolls at the 20-key cap (the account then holds 21 until the old key ends), and a create is still refused', async () => {
    const account = await service.createAccount();
    const keys = await keysOf(account, 20);
    const res = await roll(account, keys[0]!.metadata.id);
    expect(res.statusCode, res.body).toBe(201);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(21);
    expect((await create(account, { label: 'more', scopes: ['listings:write'] })).statusCode).toBe(429);
    // Once the rolled key ends, the account holds 20 again.
    await expireInTable(keys[0]!.metadata.id);
    expect((await create(account, { label: 'more', scopes: ['listings:write'] })).statusCode).toBe(429);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(20);
  });

  it('never holds more than 21 keys: a roll at 21, of another key or of the new one, is 429 until the key in its grace period ends', async () => {
    const account = await service.createAccount();
    const keys = await keysOf(account, 20);
    const first = await roll(account, keys[0]!.metadata.id);
    expect(first.statusCode, first.body).toBe(201);
    // note: rolling the new key again, or another key, would keep one more old key working
    for (const id of [first.json<Rolled>().metadata.id, keys[1]!.metadata.id]) {
      const refused = await roll(account, id);
      expect([refused.statusCode, refused.json()]).toEqual([429, { error: 'Active key limit reached (21); revoke a key first', code: 'active_key_limit' }]);
      expect(refused.headers['retry-after']).toBeUndefined();
    }
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(21);
    // A roll that ends its old key at once adds no key, so it is taken.
    expect((await roll(account, keys[1]!.metadata.id, { expires_in_sec: 0 })).statusCode).toBe(201);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(21);
    // Once the key in its grace period is revoked, the next roll is taken.
    expect((await service.request({ method: 'DELETE', url: `/v1/api/keys/${keys[0]!.metadata.id}`, headers: bearer(account.sessionToken) })).statusCode).toBe(200);
    expect((await roll(account, keys[2]!.metadata.id)).statusCode).toBe(201);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(21);
  });

  it('gives one 201 of 5 concurrent rolls of different keys at the cap, the others 429: 21 keys, not 25', async () => {
    const account = await service.createAccount();
    const keys = await keysOf(account, 20);
    const replies = await Promise.all(keys.slice(0, 5).map((key) => roll(account, key.metadata.id)));
    expect(replies.map((r) => r.statusCode).sort()).toEqual([201, 429, 429, 429, 429]);
    expect(replies.find((r) => r.statusCode === 429)!.json()).toEqual({ error: 'Active key limit reached (21); revoke a key first', code: 'active_key_limit' });
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(21);
  });

  it('keeps the cap under concurrent creates and rolls: 20 active after the rolled keys end', async () => {
    const account = await service.createAccount();
    const keys = await keysOf(account, 15);
    const rolls = keys.slice(0, 5).map((k) => roll(account, k.metadata.id, { expires_in_sec: 0 }));
    const creates = Array.from({ length: 10 }, (_, i) => create(account, { label: `c${i}`, scopes: ['listings:write'] }));
    const [rolled, made] = await Promise.all([Promise.all(rolls), Promise.all(creates)]);
    expect(rolled.map((r) => r.statusCode)).toEqual(Array<number>(5).fill(201));
    expect(made.filter((r) => r.statusCode === 201)).toHaveLength(5);
    expect(await listed(account, '?status=active&limit=100')).toHaveLength(20);
  });

  it('lets a revocation of the old key during its grace period end it at once', async () => {
    const account = await service.createAccount();
    const old = await created(account);
    const res = await roll(account, old.metadata.id);
    expect((await me(old.key)).statusCode).toBe(200);
    const revoke = await service.request({ method: 'DELETE', url: `/v1/api/keys/${old.metadata.id}`, headers: bearer(account.sessionToken) });
    expect(revoke.statusCode).toBe(200);
    expect((await me(old.key)).json()).toEqual({ error: 'Invalid API key', code: 'invalid_api_key' });
    expect((await me(res.json<Rolled>().key)).statusCode).toBe(200);
  });

  it.each([
    ['revoked', async (account: TestAccount, id: string) => void (await service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken) }))],
    ['expired', async (_: TestAccount, id: string) => expireInTable(id)],
    ['already rolled', async (account: TestAccount, id: string) => void (await roll(account, id))],
  ])('answers a key that is %s with 409', async (_, end) => {
    const account = await service.createAccount();
    const old = await created(account);
    await end(account, old.metadata.id);
    const res = await roll(account, old.metadata.id);
    expect([res.statusCode, res.json()]).toEqual([409, NOT_ROLLABLE]);
  });

  it('answers another account\'s key, an unknown id and a non-id with 404', async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    const theirs = await created(other);
    for (const id of [theirs.metadata.id, '00000000-0000-4000-8000-000000000000', 'nope']) {
      const res = await roll(account, id);
      expect([res.statusCode, res.json()]).toEqual([404, NOT_FOUND]);
    }
    expect(await listed(other)).toHaveLength(1);
  });

  it.each([[-1], [604_801], [1.5], ['60'], [null]])('answers expires_in_sec %j with 400 and rolls nothing', async (value) => {
    const account = await service.createAccount();
    const old = await created(account);
    const res = await roll(account, old.metadata.id, { expires_in_sec: value });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Body must be empty or an object whose expires_in_sec is a whole number from 0 to 604800', code: 'invalid_expires_in_sec' });
    expect(await listed(account)).toHaveLength(1);
  });

  it.each(['null', '[]', '"60"', '60', 'true'])('answers the JSON body %s, which is no object, with 400 and rolls nothing', async (body) => {
    const account = await service.createAccount();
    const old = await created(account);
    const res = await service.request({
      method: 'POST', url: `/v1/api/keys/${old.metadata.id}/roll`, headers: { ...bearer(account.sessionToken), 'content-type': 'application/json' }, payload: body,
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: 'Body must be empty or an object whose expires_in_sec is a whole number from 0 to 604800', code: 'invalid_expires_in_sec' });
    expect(await listed(account)).toHaveLength(1);
  });

  it('takes expires_in_sec 604800 (7 days)', async () => {
    const account = await service.createAccount();
    const old = await created(account);
    const res = await roll(account, old.metadata.id, { expires_in_sec: 604_800 });
    expect(res.statusCode).toBe(201);
    expect(new Date(res.json<Rolled>().rolled.expires_at).getTime()).toBeGreaterThan(Date.now() + 7 * DAY_MS - 5_000);
  });
});

describe('PATCH /v1/api/keys/{id}', () => {
  it('changes the label and the addresses, canonical, and answers the key record', async () => {
    const account = await service.createAccount();
    const key = await created(account);
    const res = await change(account, key.metadata.id, { label: '  ERP (eu)  ', allowed_ips: ['203.0.113.9/24', '2001:DB8:0:0::1', '::ffff:198.51.100.7', '203.0.113.0/24'] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: key.metadata.id, label: 'ERP (eu)', status: 'active', expires_at: null, allowed_ips: ['203.0.113.0/24', '2001:db8::1', '198.51.100.7'] });
    expect((await listed(account))[0]!.allowed_ips).toEqual(['203.0.113.0/24', '2001:db8::1', '198.51.100.7']);
  });

  it('leaves out what the body leaves out, and null allows every address again', async () => {
    const account = await service.createAccount();
    const key = await created(account, { label: 'keep', allowed_ips: ['198.51.100.7'] });
    expect((await change(account, key.metadata.id, {})).json()).toMatchObject({ label: 'keep', allowed_ips: ['198.51.100.7'] });
    expect((await change(account, key.metadata.id, { label: 'renamed' })).json()).toMatchObject({ label: 'renamed', allowed_ips: ['198.51.100.7'] });
    expect((await me(key.key, '203.0.113.1')).statusCode).toBe(403);
    const opened = await change(account, key.metadata.id, { allowed_ips: null });
    expect(opened.json()).toMatchObject({ label: 'renamed', allowed_ips: null });
    expect((await me(key.key, '203.0.113.1')).statusCode).toBe(200);
  });

  it('answers another account\'s key or an unknown id with 404, a revoked or expired key with 409', async () => {
    const account = await service.createAccount();
    const other = await created(await service.createAccount());
    expect((await change(account, other.metadata.id, { label: 'x' })).json()).toEqual(NOT_FOUND);
    expect((await change(account, 'nope', { label: 'x' })).statusCode).toBe(404);
    const revoked = await created(account);
    await service.request({ method: 'DELETE', url: `/v1/api/keys/${revoked.metadata.id}`, headers: bearer(account.sessionToken) });
    const expired = await created(account);
    await expireInTable(expired.metadata.id);
    for (const id of [revoked.metadata.id, expired.metadata.id]) {
      const res = await change(account, id, { allowed_ips: null });
      expect([res.statusCode, res.json()]).toEqual([409, ENDED]);
    }
  });

  it.each([
    ['an empty list', { allowed_ips: [] }, /^allowed_ips: /],
    ['21 entries', { allowed_ips: Array.from({ length: 21 }, (_, i) => `198.51.100.${i}`) }, /^allowed_ips: /],
    ['a bad address', { allowed_ips: ['203.0.113.300'] }, /^allowed_ips: "203\.0\.113\.300" is not an IPv4 or IPv6 address or CIDR block$/],
    ['a prefix too long', { allowed_ips: ['203.0.113.0/33'] }, /^allowed_ips: "203\.0\.113\.0\/33"/],
    ['an octal address', { allowed_ips: ['010.1.1.1'] }, /^allowed_ips: "010\.1\.1\.1"/],
    ['a hostname', { allowed_ips: ['example.com'] }, /^allowed_ips: "example\.com"/],
    ['a number entry', { allowed_ips: [7] }, /^allowed_ips: /],
    ['a string', { allowed_ips: '203.0.113.9' }, /^allowed_ips: /],
    ['an empty label', { label: ' ' }, /^label: /],
  ])('answers %s with 400 naming the field, and changes nothing', async (_, body, text) => {
    const account = await service.createAccount();
    const key = await created(account, { label: 'same' });
    const res = await change(account, key.metadata.id, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_key_fields', error: expect.stringMatching(text) });
    expect((await listed(account))[0]).toMatchObject({ label: 'same', allowed_ips: null });
  });

  it('answers a body that is not an object with 400 key_change_not_object', async () => {
    const account = await service.createAccount();
    const key = await created(account);
    const res = await change(account, key.metadata.id, ['203.0.113.9']);
    expect([res.statusCode, res.json()]).toEqual([400, { error: 'Body must be an object with "label" or "allowed_ips"', code: 'key_change_not_object' }]);
  });
});

describe('the roll and change routes\' authentication', () => {
  it.each([
    ['POST', 'roll'],
    ['PATCH', ''],
  ] as const)('%s answers without a session token 401, with an API key 401, and never carries rate-limit headers', async (method, tail) => {
    const account = await service.createAccount();
    const key = await created(account);
    const url = `/v1/api/keys/${key.metadata.id}${tail === '' ? '' : `/${tail}`}`;
    const payload = method === 'PATCH' ? { label: 'x' } : { expires_in_sec: 60 };
    const none = await service.request({ method, url, payload, remoteAddress: freshIp() });
    expect([none.statusCode, none.json<{ code: string }>().code]).toEqual([401, 'missing_session_token']);
    const withApiKey = await service.request({ method, url, payload, headers: bearer(key.key), remoteAddress: freshIp() });
    expect([withApiKey.statusCode, withApiKey.json<{ code: string }>().code]).toEqual([401, 'missing_session_token']);
    const ok = await service.request({ method, url, payload, headers: bearer(account.sessionToken) });
    expect(ok.statusCode).toBe(method === 'PATCH' ? 200 : 201);
    expect(ok.headers['x-ratelimit-remaining-minute']).toBeUndefined();
    expect((await listed(account)).length).toBe(method === 'PATCH' ? 1 : 2);
  });

  it('PATCH without a body answers 400 key_change_not_object', async () => {
    const account = await service.createAccount();
    const key = await created(account);
    const res = await service.request({ method: 'PATCH', url: `/v1/api/keys/${key.metadata.id}`, headers: bearer(account.sessionToken) });
    expect([res.statusCode, res.json<{ code: string }>().code]).toEqual([400, 'key_change_not_object']);
  });
});
