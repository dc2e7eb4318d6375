import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';
import { KEY_USE_FLUSH_MS } from '../../src/api/auth/key-use-recorder.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const RECORD_FIELDS = ['allowed_ips', 'created_at', 'expires_at', 'id', 'is_revoked', 'key_prefix', 'label', 'last_used_at', 'scopes', 'status'];
const NOT_FOUND = { error: 'API key not found', code: 'api_key_not_found' };
const INVALID_KEY = { error: 'Invalid API key', code: 'invalid_api_key' };

interface CreatedKey {
  key: string;
  metadata: { id: string; label: string; key_prefix: string; scopes: string[]; created_at: string };
  note: string;
}

interface KeyRecord {
  id: string;
  label: string;
  key_prefix: string;
  scopes: string[];
  is_revoked: boolean;
  last_used_at: string | null;
  created_at: string;
}

let ipCounter = 0;
/** A distinct client address per test, so the 401s a test provokes never add up to an IP lockout. */
function freshIp(): string {
  ipCounter += 1;
  return `10.9.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

async function createKey(account: TestAccount, label = 'key', scopes: string[] = ['listings:write']): Promise<CreatedKey> {
  const res = await service.request({
    method: 'POST',
    url: '/v1/api/keys',
    headers: bearer(account.sessionToken),
    payload: { label, scopes },
  });
  expect(res.statusCode).toBe(201);
  return res.json<CreatedKey>();
}

function listKeys(account: TestAccount) {
  return service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
}

async function listedKeys(account: TestAccount): Promise<KeyRecord[]> {
  const res = await listKeys(account);
  expect(res.statusCode).toBe(200);
  return res.json<{ keys: KeyRecord[] }>().keys;
}

function revokeKey(account: TestAccount, id: string) {
  return service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken) });
}

function getMe(key: string, remoteAddress: string) {
  return service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress });
}

const underscoreForm = (scopes: string[]) => scopes.map((s) => s.replaceAll(':', '_')).sort();

describe('GET /v1/api/keys', () => {
  it('returns {keys: []} for an account without keys', async () => {
    const account = await service.createAccount();
    const res = await listKeys(account);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ keys: [] });
  });

  it('returns {keys} whose records have exactly id, label, key_prefix, scopes, is_revoked, status, expires_at, allowed_ips, last_used_at, created_at', async () => {
    const account = await service.createAccount();
    const created = await createKey(account, 'Warehouse sync', ['listings_write', 'jobs:read']);
    const res = await listKeys(account);
    expect(res.statusCode).toBe(200);
    const body = res.json<{ keys: KeyRecord[] }>();
    expect(Object.keys(body)).toEqual(['keys']);
    expect(body.keys).toHaveLength(1);
    const [record] = body.keys;
    expect(Object.keys(record!).sort()).toEqual(RECORD_FIELDS);
    const { scopes, created_at, ...rest } = record!;
    expect(rest).toEqual({
      id: created.metadata.id,
      label: 'Warehouse sync',
      key_prefix: created.metadata.key_prefix,
      is_revoked: false,
      status: 'active',
      expires_at: null,
      allowed_ips: null,
      last_used_at: null,
    });
    expect(created_at).toMatch(ISO_TIMESTAMP);
    expect(record!.id).toMatch(UUID_PATTERN);
    expect(new Date(created_at).getTime()).toBe(new Date(created.metadata.created_at).getTime());
    expect(underscoreForm(scopes)).toEqual(['jobs_read', 'listings_write']);
  });

  it('lists keys newest first, revoked keys included with is_revoked true', async () => {
    const account = await service.createAccount();
    const first = await createKey(account, 'first');
    const second = await createKey(account, 'second');
    const third = await createKey(account, 'third');
    expect((await revokeKey(account, second.metadata.id)).statusCode).toBe(200);

    const keys = await listedKeys(account);
    expect(keys.map((k) => [k.id, k.label, k.is_revoked])).toEqual([
      [third.metadata.id, 'third', false],
      [second.metadata.id, 'second', true],
      [first.metadata.id, 'first', false],
    ]);
    const times = keys.map((k) => new Date(k.created_at).getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('returns at most 50 keys: the 50 newest of 55', async () => {
    const account = await service.createAccount();
    // Every key whose number is not a multiple of 3 is revoked right away, which keeps the
    // account under the 20-active-key cap (18 active of 55).
    for (let i = 1; i <= 55; i += 1) {
      const created = await createKey(account, `key ${String(i).padStart(2, '0')}`);
      if (i % 3 !== 0) expect((await revokeKey(account, created.metadata.id)).statusCode).toBe(200);
    }
    const keys = await listedKeys(account);
    expect(keys).toHaveLength(50);
    const expected = Array.from({ length: 50 }, (_, j) => 55 - j).map((i) => [`key ${String(i).padStart(2, '0')}`, i % 3 !== 0]);
    expect(keys.map((k) => [k.label, k.is_revoked])).toEqual(expected);
  });

  it('never returns a full key, its secret part or its hash', async () => {
    const account = await service.createAccount();
    const created = [await createKey(account, 'a'), await createKey(account, 'b')];
    const res = await listKeys(account);
    expect(res.statusCode).toBe(200);
    for (const { key } of created) {
      const hash = createHash('sha256').update(key).digest();
      expect(res.body).not.toContain(key);
      expect(res.body).not.toContain(key.slice(-32));
      expect(res.body).not.toContain(hash.toString('hex'));
      expect(res.body).not.toContain(hash.toString('base64'));
      expect(res.body).not.toContain(hash.toString('base64url'));
    }
    expect(res.body).not.toMatch(/key_hash|"key"\s*:/);
  });

  it('shows last_used_at null before first use and a timestamp after the key is used on GET /v1/api/me', async () => {
    const account = await service.createAccount();
    const used = await createKey(account, 'used');
    const unused = await createKey(account, 'unused');
    expect((await listedKeys(account)).map((k) => k.last_used_at)).toEqual([null, null]);

    expect((await getMe(used.key, freshIp())).statusCode).toBe(200);
    // note: the service records use without delaying the request, batched: the write comes
    // KEY_USE_FLUSH_MS after the use, as long as expect.poll's own default wait (a PgBouncer CI
    // run missed it), so poll for longer.
    await expect
      .poll(async () => (await listedKeys(account)).find((k) => k.id === used.metadata.id)?.last_used_at ?? null, { timeout: KEY_USE_FLUSH_MS + 5_000, interval: 100 })
      .toMatch(ISO_TIMESTAMP);
    const keys = await listedKeys(account);
    expect(keys.find((k) => k.id === unused.metadata.id)?.last_used_at).toBeNull();
  });

  it("lists only the calling account's keys", async () => {
    const alice = await service.createAccount();
    const bob = await service.createAccount();
    const aliceKeys = [await createKey(alice, 'alice 1'), await createKey(alice, 'alice 2')];
    const bobKeys = [await createKey(bob, 'bob 1')];
    expect((await listedKeys(alice)).map((k) => k.id).sort()).toEqual(aliceKeys.map((k) => k.metadata.id).sort());
    expect((await listedKeys(bob)).map((k) => k.id)).toEqual(bobKeys.map((k) => k.metadata.id));
  });
});

describe('DELETE /v1/api/keys/:id', () => {
  it('returns 200 with exactly {revoked: {id, key_prefix, is_revoked: true}}', async () => {
    const account = await service.createAccount();
    const created = await createKey(account);
    const res = await revokeKey(account, created.metadata.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toStrictEqual({
      revoked: { id: created.metadata.id, key_prefix: created.metadata.key_prefix, is_revoked: true },
    });
  });

  it('marks the key revoked in the database', async () => {
    const account = await service.createAccount();
    const created = await createKey(account);
    expect((await revokeKey(account, created.metadata.id)).statusCode).toBe(200);
    const [row] = await service.sql<{ is_revoked: boolean }[]>`select is_revoked from api_keys where id = ${created.metadata.id}`;
    expect(row?.is_revoked).toBe(true);
  });

  it('makes the revoked key get 401 Invalid API key on the very next request', async () => {
    const account = await service.createAccount();
    const created = await createKey(account);
    const ip = freshIp();
    expect((await getMe(created.key, ip)).statusCode).toBe(200);
    expect((await revokeKey(account, created.metadata.id)).statusCode).toBe(200);
    const res = await getMe(created.key, ip);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(INVALID_KEY);
  });

  it("leaves the account's other keys working", async () => {
    const account = await service.createAccount();
    const revoked = await createKey(account, 'revoked');
    const kept = await createKey(account, 'kept');
    expect((await revokeKey(account, revoked.metadata.id)).statusCode).toBe(200);
    expect((await getMe(kept.key, freshIp())).statusCode).toBe(200);
  });

  it('returns the same 200 body when the key is revoked again, and the key stays revoked', async () => {
    const account = await service.createAccount();
    const created = await createKey(account);
    const first = await revokeKey(account, created.metadata.id);
    const second = await revokeKey(account, created.metadata.id);
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual(first.json());
    const res = await getMe(created.key, freshIp());
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(INVALID_KEY);
  });

  it("returns 404 API key not found for another account's key, which keeps working", async () => {
    const owner = await service.createAccount();
    const intruder = await service.createAccount();
    const created = await createKey(owner);
    const res = await revokeKey(intruder, created.metadata.id);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
    expect((await getMe(created.key, freshIp())).statusCode).toBe(200);
    expect((await listedKeys(owner)).map((k) => k.is_revoked)).toEqual([false]);
  });

  it.each<[string, () => string]>([
    ['a random uuid', () => randomUUID()],
    ['a non-uuid id', () => 'not-a-uuid'],
    ['a number', () => '12345'],
    ['a uuid with extra characters', () => `${randomUUID()}0`],
    ['a key prefix', () => 'deadbeef'],
  ])('returns 404 API key not found for %s', async (_case, id) => {
    const account = await service.createAccount();
    await createKey(account);
    const res = await revokeKey(account, id());
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
    expect((await listedKeys(account)).map((k) => k.is_revoked)).toEqual([false]);
  });
});
