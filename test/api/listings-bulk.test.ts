import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTING_DEFAULTS, validListing } from '../support/fixtures.js';
import { startBulkEndpoint, type StartedBulkEndpoint } from '../support/bulk-endpoint.js';
import type { TestAccount } from '../support/test-service.js';
import { rowError } from '../support/row-errors.js';

const DRAGON = '\u{1F409}'; // one code point, two UTF-16 units

function photos(count: number, name = 'photo'): string[] {
  return Array.from({ length: count }, (_, i) => `https://cdn.example.test/${name}-${i}.jpg`);
}

/** What only listings do; what both bulk endpoints promise is in bulk-endpoint-contract.test.ts. */
describe('POST /v1/api/listings/bulk', () => {
  let kit: StartedBulkEndpoint;

  beforeAll(async () => {
    kit = await startBulkEndpoint('listings');
  });
  afterAll(async () => {
    await kit?.close();
  });

  async function listingsOf(account: TestAccount) {
    return kit.service.sql`
      select title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, color, tags,
             print_time_hours, is_available, allows_custom_orders, maker_name, maker_photo_url, account_id, import_job_id
      from listings where account_id = ${account.id} order by title`;
  }

  describe('success', () => {
    it('creates the valid rows of a mixed batch for the key\'s account and reports the others', async () => {
      const { account, key } = await kit.partner({ name: 'Acme Prints', avatarUrl: 'https://cdn.example.test/acme.png' });
      const other = await kit.service.createAccount();
      const tags = ['a,b', 'quote"d', 'back\\slash', 'NULL', '{brace}', ' spaced ', 't7', 't8', 't9', 't10', 't11', 't12'];
      const full = {
        title: '  Dragon with every field  ',
        description: 'All optional fields set.',
        price_cents: 0,
        currency: 'USD',
        category: 'home_decor',
        material: 'PETG',
        photo_urls: photos(10, 'full'),
        color: ' Midnight blue ',
        tags,
        print_time_hours: 3.25,
        is_available: false,
        allows_custom_orders: true,
        // unknown or server-owned fields: never stored
        account_id: other.id,
        maker_name: 'Someone else',
        maker_photo_url: 'https://evil.example.test/me.png',
        thumbnail_url: 'https://evil.example.test/thumb.png',
        import_job_id: 'forged',
        id: randomUUID(),
        sku: 'D-1',
      };
      const before = await kit.snapshot();

      const res = await kit.post(key, {
        listings: [
          validListing({ title: 'Minimal dragon', price_cents: 2_147_483_647 }),
          validListing({ currency: 'EUR' }),
          null,
          full,
          validListing({ price_cents: '1500' }),
        ],
      });

      kit.expectImported(res, 2, [
        rowError(1, 'currency: must be exactly USD', 'not_allowed'),
        rowError(2, 'row must be an object', 'not_an_object'),
        rowError(4, 'price_cents: must be a whole number', 'wrong_type'),
      ]);
      expect(await kit.growthSince(before)).toMatchObject({ listings: 2, machines: 0, imports: 1 });

      const maker = { maker_name: 'Acme Prints', maker_photo_url: 'https://cdn.example.test/acme.png', account_id: account.id };
      const rows = await listingsOf(account);
      expect(rows).toEqual([
        {
          ...maker,
          title: 'Dragon with every field',
          description: 'All optional fields set.',
          price_cents: 0,
          currency: 'USD',
          category: 'home_decor',
          material: 'PETG',
          photo_urls: photos(8, 'full'),
          thumbnail_url: 'https://cdn.example.test/full-0.jpg',
          color: 'Midnight blue',
          tags: ['a,b', 'quote"d', 'back\\slash', 'NULL', '{brace}', 'spaced', 't7', 't8', 't9', 't10'],
          print_time_hours: 3.25,
          is_available: false,
          allows_custom_orders: true,
          import_job_id: expect.any(String),
        },
        {
          ...maker,
          title: 'Minimal dragon',
          description: 'A fully articulated dragon printed in silk PLA, assembled and checked by hand.',
          price_cents: 2_147_483_647,
          currency: 'USD',
          category: 'miniatures',
          material: 'PLA',
          photo_urls: ['https://cdn.example.test/dragon-1.jpg', 'https://cdn.example.test/dragon-2.jpg'],
          thumbnail_url: 'https://cdn.example.test/dragon-1.jpg',
          ...LISTING_DEFAULTS,
          import_job_id: expect.any(String),
        },
      ]);
      expect(rows[0]?.import_job_id).not.toBe('forged');
      expect(await kit.labelsOf(other)).toEqual([]);
    });

    it('takes maker_photo_url as null from an account without an avatar', async () => {
      const { account, key } = await kit.partner({ name: 'No Avatar Ltd', avatarUrl: null });
      const res = await kit.post(key, { listings: [validListing()] });
      expect(res.statusCode).toBe(201);
      const rows = await listingsOf(account);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ maker_name: 'No Avatar Ltd', maker_photo_url: null });
    });

    it('stores text cut to the stored lengths in code points, trimmed first, never splitting an emoji', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(key, {
        listings: [
          validListing({
            title: `  ${'a'.repeat(119)}${DRAGON}${DRAGON} tail `,
            description: `\n${'d'.repeat(1_999)}${DRAGON}${'e'.repeat(50)}`,
            material: `     ${'m'.repeat(85)}`,
            color: `${'c'.repeat(39)}${DRAGON}${DRAGON}`,
          }),
        ],
      });
      kit.expectImported(res, 1, []);
      const [row] = await kit.service.sql`
        select title, description, material, color,
               char_length(title) as title_len, char_length(description) as description_len,
               char_length(material) as material_len, char_length(color) as color_len
        from listings where account_id = ${account.id}`;
      expect(row).toEqual({
        title: `${'a'.repeat(119)}${DRAGON}`,
        description: `${'d'.repeat(1_999)}${DRAGON}`,
        material: 'm'.repeat(80),
        color: `${'c'.repeat(39)}${DRAGON}`,
        title_len: 120,
        description_len: 2_000,
        material_len: 80,
        color_len: 40,
      });
    });

    it('stores a cut title exactly as docs/rows.md defines it: trimmed, then cut, even when the cut ends on a space', async () => {
      const { account, key } = await kit.partner();
      // trimmed: 119 a's, a space, "tail" (124 code points); cut to 120: 119 a's and the space
      const res = await kit.post(key, { listings: [validListing({ title: ` ${'a'.repeat(119)} tail` })] });
      expect(res.statusCode).toBe(201);
      expect(await kit.labelsOf(account)).toEqual([`${'a'.repeat(119)} `]);
    });

    it('reports a NUL character as a per-row error and still creates the other rows', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(key, {
        listings: [validListing({ title: 'Dragon\u0000' }), validListing({ title: 'Clean dragon' }), validListing({ tags: ['\u0000'] })],
      });
      kit.expectImported(res, 1, [
        rowError(0, 'title: must not contain NUL characters', 'invalid_characters'),
        rowError(2, 'tags[0]: must not contain NUL characters', 'invalid_characters'),
      ]);
      expect(await kit.labelsOf(account)).toEqual(['Clean dragon']);
    });

    it('accepts 200 rows, and inserted + skipped equals the rows sent', async () => {
      const { account, key } = await kit.partner();
      const listings = Array.from({ length: 200 }, (_, i) =>
        i % 7 === 0 ? validListing({ title: `bad ${i}`, price_cents: -1 }) : validListing({ title: `row ${String(i).padStart(3, '0')}` }),
      );
      const res = await kit.post(key, { listings });
      kit.expectImported(res, 200 - 29, Array.from({ length: 29 }, (_, n) => rowError(n * 7, 'price_cents: must be >= 0', 'out_of_range')));
      expect(await kit.labelsOf(account)).toEqual(listings.filter((_, i) => i % 7 !== 0).map((row) => row.title));
    });

    it('records the import in the imports table with its counts, errors and request id', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(
        key,
        { listings: [validListing(), validListing({ category: 'toys' }), validListing(), validListing()] },
        { 'x-request-id': 'partner-batch-0042' },
      );
      expect(res.statusCode).toBe(201);
      expect(res.headers['x-request-id']).toBe('partner-batch-0042');
      const result = res.json() as { inserted: number; skipped: number; errors: unknown[] };
      expect(result.inserted).toBe(3);

      const imports = await kit.importsOf(account);
      expect(imports).toEqual([
        {
          job_id: expect.any(String),
          account_id: account.id,
          kind: 'listings',
          request_id: 'partner-batch-0042',
          inserted: 3,
          skipped: 1,
          errors: result.errors,
        },
      ]);
      const importIds = (await listingsOf(account)).map((row) => row.import_job_id);
      expect(importIds).toEqual([imports[0]?.job_id, imports[0]?.job_id, imports[0]?.job_id]);
    });

    it.each([
      ['enterprise', 300, 100_000],
      ['global', 1_000, 500_000],
    ])('carries the X-RateLimit-* headers and X-Request-Id on a 201 (%s)', async (tier, perMinute, perDay) => {
      const { account, key } = await kit.partner({ tier });
      const first = await kit.post(key, { listings: [validListing()] });
      const second = await kit.post(key, { listings: [validListing()] });
      for (const res of [first, second]) {
        expect(res.statusCode).toBe(201);
        expect(res.headers['x-ratelimit-limit-minute']).toBe(String(perMinute));
        expect(res.headers['x-ratelimit-limit-day']).toBe(String(perDay));
        expect(res.headers['x-ratelimit-remaining-minute']).toMatch(/^\d+$/);
        expect(res.headers['x-ratelimit-remaining-day']).toMatch(/^\d+$/);
      }
      expect(first.headers['x-ratelimit-remaining-minute']).toBe(String(perMinute - 1));
      expect(second.headers['x-ratelimit-remaining-minute']).toBe(String(perMinute - 2));
      expect(second.headers['x-ratelimit-remaining-day']).toBe(String(perDay - 2));

      const requestIds = [first.headers['x-request-id'], second.headers['x-request-id']];
      expect(requestIds[0]).toEqual(expect.any(String));
      expect(requestIds[0]).not.toBe(requestIds[1]);
      const recorded = await kit.importsOf(account);
      expect(recorded.map((row) => row.request_id).sort()).toEqual([...requestIds].sort());
    });
  });

  describe('refused requests write nothing', () => {
    it('400 no valid rows, with every row\'s error', async () => {
      const { key } = await kit.partner();
      const rows = [validListing({ currency: 'usd' }), 'row', validListing({ title: ' ' }), validListing({ photo_urls: ['http://x.test/a.jpg'] })];
      await kit.expectRefused(() => kit.post(key, { listings: rows }), 400, {
        error: 'no valid rows',
        code: 'no_valid_rows',
        errors: [
          rowError(0, 'currency: must be exactly USD', 'not_allowed'),
          rowError(1, 'row must be an object', 'not_an_object'),
          rowError(2, 'title: required', 'required'),
          rowError(3, 'photo_urls[0]: must be an absolute https:// URL', 'invalid_url'),
        ],
      });
    });
  });
});
