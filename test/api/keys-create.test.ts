import { createHash } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/shared/access/scopes.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

const KEY_PATTERN = /^svc_live_[0-9a-f]{8}_[0-9a-f]{32}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const CAP_REACHED = { error: 'Active key limit reached (20); revoke a key first', code: 'active_key_limit' };

interface CreatedKey {
  key: string;
  metadata: { id: string; label: string; key_prefix: string; scopes: string[]; created_at: string };
  note: string;
}

interface ErrorBody {
  error: string;
}

describe('POST /v1/api/keys', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  function createKeyRequest(account: TestAccount, payload: unknown, extra: Partial<InjectOptions> = {}) {
    return service.request({
      method: 'POST',
      url: '/v1/api/keys',
      headers: bearer(account.sessionToken),
      payload: payload as InjectOptions['payload'],
      ...extra,
    });
  }

  async function keyCount(accountId: string, which: 'all' | 'active' = 'all'): Promise<number> {
    const [row] = await service.sql<{ n: number }[]>`
      select count(*)::int as n from api_keys
      where account_id = ${accountId} and (${which === 'all'} or not is_revoked)`;
    return row?.n ?? -1;
  }

  describe('success', () => {
    it('returns 201 with exactly {key, metadata: {id, label, key_prefix, scopes, created_at}, note, expires_at, allowed_ips}', async () => {
      const account = await service.createAccount();
      const res = await createKeyRequest(account, { label: 'CI uploader', scopes: ['listings:write'] });
      expect(res.statusCode).toBe(201);
      const body = res.json<CreatedKey>();
      expect(Object.keys(body).sort()).toEqual(['allowed_ips', 'expires_at', 'key', 'metadata', 'note']);
      expect(Object.keys(body.metadata).sort()).toEqual(['created_at', 'id', 'key_prefix', 'label', 'scopes']);
      expect(body.key).toMatch(KEY_PATTERN);
      expect(body.metadata.id).toMatch(UUID_PATTERN);
      expect(body.metadata.label).toBe('CI uploader');
      expect(body.metadata.key_prefix).toMatch(/^[0-9a-f]{8}$/);
      expect(body.metadata.scopes).toEqual(['listings_write']);
      expect(body.metadata.created_at).toMatch(ISO_TIMESTAMP);
      expect(typeof body.note).toBe('string');
    });

    it('returns a key_prefix equal to the 8 hex characters after svc_live_ in the key', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'prefix', scopes: ['jobs:read'] })).json<CreatedKey>();
      expect(body.key).toMatch(KEY_PATTERN);
      expect(body.metadata.key_prefix).toBe(body.key.slice('svc_live_'.length, 'svc_live_'.length + 8));
    });

    it('returns a note saying the full key is shown only once and must be stored securely', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'note', scopes: ['listings:write'] })).json<CreatedKey>();
      expect(body.note).toMatch(/\bonly\b[^.]*\b(once|time)\b/i);
      expect(body.note).toMatch(/secure/i);
      expect(body.note).not.toContain(body.key);
    });

    it('returns metadata.created_at equal to the stored created_at', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'created', scopes: ['listings:write'] })).json<CreatedKey>();
      const [row] = await service.sql<{ created_at: Date }[]>`select created_at from api_keys where id = ${body.metadata.id}`;
      expect(row).toBeDefined();
      expect(new Date(body.metadata.created_at).getTime()).toBe(row!.created_at.getTime());
    });

    it.each<[string, string[], string[]]>([
      ['colon form', ['listings:write'], ['listings_write']],
      ['underscore form', ['listings_write'], ['listings_write']],
      ['both forms of one scope, merged', ['listings:write', 'listings_write'], ['listings_write']],
      ['a repeated scope, merged', ['jobs:read', 'jobs:read', 'jobs_read'], ['jobs_read']],
      ['a single-word scope', ['webhooks'], ['webhooks']],
      [
        'every scope, mixed forms',
        ['listings:write', 'listings_read', 'jobs:read', 'earnings_read', 'webhooks'],
        ['earnings_read', 'jobs_read', 'listings_read', 'listings_write', 'webhooks'],
      ],
    ])('accepts scopes in %s and returns them in underscore form', async (_case, scopes, expected) => {
      const account = await service.createAccount();
      const res = await createKeyRequest(account, { label: 'scopes', scopes });
      expect(res.statusCode).toBe(201);
      const returned = res.json<CreatedKey>().metadata.scopes;
      expect([...returned].sort()).toEqual(expected);
    });

    it('stores merged scopes once, so the key reports each scope once on GET /v1/api/me', async () => {
      const account = await service.createAccount();
      const body = (
        await createKeyRequest(account, { label: 'merged', scopes: ['listings_write', 'listings:write', 'jobs:read'] })
      ).json<CreatedKey>();
      const me = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(body.key) });
      expect(me.statusCode).toBe(200);
      expect([...me.json<{ key: { scopes: string[] } }>().key.scopes].sort()).toEqual(['jobs:read', 'listings:write']);
    });

    it.each<[string, string, string]>([
      ['an 80-character label', 'a'.repeat(80), 'a'.repeat(80)],
      ['a label with surrounding whitespace, trimmed', '  Nightly sync  ', 'Nightly sync'],
      ['80 characters after trimming', `  ${'b'.repeat(80)}\t`, 'b'.repeat(80)],
      ['80 non-BMP characters (80 code points)', '🔑'.repeat(80), '🔑'.repeat(80)],
      ['a one-character label', 'x', 'x'],
    ])('accepts %s', async (_case, label, stored) => {
      const account = await service.createAccount();
      const res = await createKeyRequest(account, { label, scopes: ['listings:write'] });
      expect(res.statusCode).toBe(201);
      const body = res.json<CreatedKey>();
      expect(body.metadata.label).toBe(stored);
      const [row] = await service.sql<{ label: string }[]>`select label from api_keys where id = ${body.metadata.id}`;
      expect(row?.label).toBe(stored);
    });

    it('gives two created keys different values, prefixes, hashes and ids', async () => {
      const account = await service.createAccount();
      const first = (await createKeyRequest(account, { label: 'one', scopes: ['listings:write'] })).json<CreatedKey>();
      const second = (await createKeyRequest(account, { label: 'two', scopes: ['listings:write'] })).json<CreatedKey>();
      expect(first.key).not.toBe(second.key);
      expect(first.metadata.key_prefix).not.toBe(second.metadata.key_prefix);
      expect(first.metadata.id).not.toBe(second.metadata.id);
      const rows = await service.sql<{ key_hash: Buffer }[]>`
        select key_hash from api_keys where id in ${service.sql([first.metadata.id, second.metadata.id])}`;
      expect(rows).toHaveLength(2);
      expect(rows[0]!.key_hash.equals(rows[1]!.key_hash)).toBe(false);
    });

    it('creates a key that authenticates on GET /v1/api/me for the creating account', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'works', scopes: ['listings:write'] })).json<CreatedKey>();
      const me = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(body.key) });
      expect(me.statusCode).toBe(200);
      expect(me.json<{ id: string; key: { prefix: string } }>()).toMatchObject({
        id: account.id,
        key: { prefix: body.metadata.key_prefix },
      });
    });
  });

  describe('storage', () => {
    it('stores the prefix and a 32-byte key_hash equal to sha256(full key)', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'stored', scopes: ['listings:write'] })).json<CreatedKey>();
      const [row] = await service.sql<{ account_id: string; key_prefix: string; key_hash: Buffer; is_revoked: boolean }[]>`
        select account_id, key_prefix, key_hash, is_revoked from api_keys where id = ${body.metadata.id}`;
      expect(row).toBeDefined();
      expect(row!.account_id).toBe(account.id);
      expect(row!.key_prefix).toBe(body.metadata.key_prefix);
      expect(row!.is_revoked).toBe(false);
      expect(row!.key_hash).toHaveLength(32);
      expect(row!.key_hash.toString('hex')).toBe(createHash('sha256').update(body.key).digest('hex'));
    });

    it('never stores the full key or its secret part in any column of the api_keys row', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'secret', scopes: ['listings:write'] })).json<CreatedKey>();
      const secretPart = body.key.slice(-32);
      const [row] = await service.sql<{ as_text: string }[]>`select k::text as as_text from api_keys k where id = ${body.metadata.id}`;
      expect(row).toBeDefined();
      expect(row!.as_text).toContain(body.metadata.key_prefix);
      expect(row!.as_text).not.toContain(body.key);
      expect(row!.as_text).not.toContain(secretPart);
      const [anywhere] = await service.sql<{ n: number }[]>`
        select count(*)::int as n from api_keys k
        where strpos(k::text, ${secretPart}) > 0 or strpos(k::text, ${body.key}) > 0`;
      expect(anywhere?.n).toBe(0);
    });

    it('never writes the full key to the logs', async () => {
      const account = await service.createAccount();
      const body = (await createKeyRequest(account, { label: 'logs', scopes: ['listings:write'] })).json<CreatedKey>();
      await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(body.key) });
      expect(service.rawLogs()).not.toContain(body.key.slice(-32));
    });
  });

  describe('validation', () => {
    let account: TestAccount;

    beforeAll(async () => {
      account = await service.createAccount();
    });

    it.each<[string, unknown, RegExp]>([
      ['missing label', { scopes: ['listings:write'] }, /label/],
      ['empty label', { label: '', scopes: ['listings:write'] }, /label/],
      ['blank label', { label: '   \t ', scopes: ['listings:write'] }, /label/],
      ['81-character label', { label: 'a'.repeat(81), scopes: ['listings:write'] }, /label/],
      ['81 characters after trimming', { label: ` ${'a'.repeat(81)} `, scopes: ['listings:write'] }, /label/],
      ['label a number', { label: 42, scopes: ['listings:write'] }, /label/],
      ['label null', { label: null, scopes: ['listings:write'] }, /label/],
      ['label an array', { label: ['a'], scopes: ['listings:write'] }, /label/],
      ['label an object', { label: { text: 'a' }, scopes: ['listings:write'] }, /label/],
      ['missing scopes', { label: 'k' }, /scopes/],
      ['empty scopes array', { label: 'k', scopes: [] }, /scopes/],
      ['scopes a string', { label: 'k', scopes: 'listings:write' }, /scopes/],
      ['scopes null', { label: 'k', scopes: null }, /scopes/],
      ['scopes an object', { label: 'k', scopes: { 0: 'listings:write' } }, /scopes/],
      ['a scope that is not a string', { label: 'k', scopes: [42] }, /scopes/],
      ['an empty-string scope', { label: 'k', scopes: [''] }, /scopes/],
    ])('returns 400 for %s and creates no key', async (_case, payload, mentions) => {
      const res = await createKeyRequest(account, payload);
      expect(res.statusCode).toBe(400);
      const body = res.json<ErrorBody>();
      expect(body.error).toMatch(mentions);
      expect(await keyCount(account.id)).toBe(0);
    });

    it.each([
      ['ESC (an ANSI escape sequence)', 'Nightly \u001b[2J sync'],
      ['CR', 'Nightly\rsync'],
      ['LF', 'Nightly\nsync'],
      ['a tab inside', 'Nightly\tsync'],
      ['NUL', 'Nightly\u0000sync'],
      ['DEL', 'Nightly\u007fsync'],
      ['a C1 control (U+009B, CSI)', 'Nightly\u009b2Jsync'],
      ['RIGHT-TO-LEFT OVERRIDE (U+202E)', 'invoice\u202Etxt.exe'],
      ['RIGHT-TO-LEFT ISOLATE (U+2067)', 'a\u2067b'],
      ['LEFT-TO-RIGHT MARK (U+200E)', 'a\u200Eb'],
      ['ARABIC LETTER MARK (U+061C)', 'a\u061Cb'],
    ])('returns 400 "label: must not contain control characters" for a label with %s, and creates no key', async (_case, label) => {
      const res = await createKeyRequest(account, { label, scopes: ['listings:write'] });
      expect(res.statusCode).toBe(400);
      expect(res.json<ErrorBody>()).toEqual({ error: 'label: must not contain control characters', code: 'invalid_key_fields' });
      expect(await keyCount(account.id)).toBe(0);
    });

    it('accepts a label in any script, with emoji and combining marks', async () => {
      const other = await service.createAccount();
      const res = await createKeyRequest(other, { label: 'Ünïcode 同步 שלום 🚀 e\u0301', scopes: ['listings:write'] });
      expect(res.statusCode).toBe(201);
    });

    it.each<[string, string[], string]>([
      ['a misspelt scope', ['listings:wrte'], 'listings:wrte'],
      ['an unknown scope next to a valid one', ['listings:write', 'admin'], 'admin'],
      ['a scope with a dash', ['listings-write'], 'listings-write'],
      ['a scope with a trailing space', ['jobs:read '], 'jobs:read '],
    ])('returns 400 naming the scope for %s and creates no key', async (_case, scopes, named) => {
      const res = await createKeyRequest(account, { label: 'k', scopes });
      expect(res.statusCode).toBe(400);
      expect(res.json<ErrorBody>().error).toContain(named);
      expect(await keyCount(account.id)).toBe(0);
    });

    it.each<[string, string, string]>([
      ['a U+202E', 'a\u202eb', '"a\\u202eb"'],
      ['10,000 characters', 's'.repeat(10_000), `"${'s'.repeat(64)}…"`],
      ['a quote and a backslash', 'a"b\\', '"a\\"b\\\\"'],
      ['nothing', '', '""'],
    ])('names an unknown scope of %s at most 64 characters, escaped, in quotes', async (_case, scope, shown) => {
      const res = await createKeyRequest(account, { label: 'k', scopes: [scope] });
      expect(res.statusCode).toBe(400);
      expect(res.json<ErrorBody>()).toEqual({ error: `scopes: unknown scope ${shown}; valid scopes: ${SCOPES.join(', ')}`, code: 'unknown_scope' });
      expect(res.body).not.toContain('\u202e');
      expect(await keyCount(account.id)).toBe(0);
    });

    it.each<[string, string | undefined]>([
      ['a JSON array', '[{"label":"k","scopes":["listings:write"]}]'],
      ['a JSON string', '"k"'],
      ['a JSON number', '42'],
      ['JSON null', 'null'],
      ['JSON true', 'true'],
      ['invalid JSON', '{"label": "k", "scopes": ['],
    ])('returns 400 when the body is %s and creates no key', async (_case, raw) => {
      const res = await createKeyRequest(account, raw, { headers: { ...bearer(account.sessionToken), 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(400);
      expect(typeof res.json<ErrorBody>().error).toBe('string');
      expect(await keyCount(account.id)).toBe(0);
    });

    it('returns 400 when there is no body and creates no key', async () => {
      const res = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
      expect(res.statusCode).toBe(400);
      expect(typeof res.json<ErrorBody>().error).toBe('string');
      expect(await keyCount(account.id)).toBe(0);
    });
  });

  describe('active-key cap (20)', () => {
    async function createKeys(account: TestAccount, n: number): Promise<CreatedKey[]> {
      const created: CreatedKey[] = [];
      for (let i = 0; i < n; i += 1) {
        const res = await createKeyRequest(account, { label: `key ${i + 1}`, scopes: ['listings:write'] });
        expect(res.statusCode).toBe(201);
        created.push(res.json<CreatedKey>());
      }
      return created;
    }

    it('returns 429 with the cap message on the 21st active key and writes nothing', async () => {
      const account = await service.createAccount();
      await createKeys(account, 20);
      const res = await createKeyRequest(account, { label: 'one too many', scopes: ['listings:write'] });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual(CAP_REACHED);
      expect(await keyCount(account.id)).toBe(20);
    });

    it('allows a create again after one key is revoked, and then caps again', async () => {
      const account = await service.createAccount();
      const keys = await createKeys(account, 20);
      const revoke = await service.request({
        method: 'DELETE',
        url: `/v1/api/keys/${keys[4]!.metadata.id}`,
        headers: bearer(account.sessionToken),
      });
      expect(revoke.statusCode).toBe(200);
      const again = await createKeyRequest(account, { label: 'replacement', scopes: ['listings:write'] });
      expect(again.statusCode).toBe(201);
      const over = await createKeyRequest(account, { label: 'over', scopes: ['listings:write'] });
      expect(over.statusCode).toBe(429);
      expect(over.json()).toEqual(CAP_REACHED);
      expect(await keyCount(account.id, 'active')).toBe(20);
      expect(await keyCount(account.id, 'all')).toBe(21);
    });

    it('counts per account: another account can create while one is at the cap', async () => {
      const full = await service.createAccount();
      await createKeys(full, 20);
      const other = await service.createAccount();
      const res = await createKeyRequest(other, { label: 'other account', scopes: ['listings:write'] });
      expect(res.statusCode).toBe(201);
    });

    it('holds under 30 parallel creates: exactly 20 succeed, 10 get 429, 20 active keys exist', async () => {
      const account = await service.createAccount();
      const responses = await Promise.all(
        Array.from({ length: 30 }, (_, i) => createKeyRequest(account, { label: `parallel ${i}`, scopes: ['listings:write'] })),
      );
      const created = responses.filter((r) => r.statusCode === 201);
      const refused = responses.filter((r) => r.statusCode === 429);
      expect(created).toHaveLength(20);
      expect(refused).toHaveLength(10);
      for (const res of refused) expect(res.json()).toEqual(CAP_REACHED);
      expect(new Set(created.map((r) => r.json<CreatedKey>().key)).size).toBe(20);
      expect(await keyCount(account.id, 'active')).toBe(20);
      expect(await keyCount(account.id, 'all')).toBe(20);
    });
  });
});
