import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { checkImportBody } from '../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../src/api/import/import-refusal.js';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { ListingRowSchema, type ListingRow } from '../../src/shared/rows/listing-row.js';
import { MachineRowSchema, type MachineRow } from '../../src/shared/rows/machine-row.js';
import { validListing, validMachine } from '../support/fixtures.js';
import { jsonFieldValue, rowArbitraries } from '../support/hostile-rows.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';

/**
 * The tables check every stored row again (docs/rows.md#stored-once): a job's rows come from the
 * queue, which anything with Redis access can write, so a row the API would refuse is refused by
 * the database too, through the worker's own write path. And the tables never refuse a row the
 * row rules accept.
 */

const DRAGON = '\u{1F409}'; // one character, two UTF-16 units
const URL_BASE = 'https://cdn.example.test/';
const listing = (overrides: Partial<Record<keyof ListingRow, unknown>> = {}) => ({ ...ListingRowSchema.parse(validListing()), ...overrides });
const machine = (overrides: Partial<Record<keyof MachineRow, unknown>> = {}) => ({ ...MachineRowSchema.parse(validMachine()), ...overrides });
const photo = (url: string) => ({ photo_urls: [url], thumbnail_url: url });

describe('the tables re-check the row rules on rows written through the queue (writeImport)', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Forger');
  });
  afterAll(async () => {
    await db?.close();
  });

  /** An import of `rows` as a job carries them, written or not exactly as given. */
  function importOf(kind: ImportKind, rows: object[], matchExternalIds = false): ImportWrite {
    return {
      importId: randomUUID(), kind, accountId: db.accountId, requestId: 'row-limits-test', total: rows.length, errors: [], rowCount: rows.length,
      rows: encodeImportRows(rows as ListingRow[]), matchExternalIds,
    };
  }

  async function written(importId: string): Promise<number> {
    const [row] = await db.sql<{ n: number }[]>`
      select (select count(*) from listings where import_job_id = ${importId}) + (select count(*) from machines where import_job_id = ${importId})
           + (select count(*) from imports where job_id = ${importId}) as n`;
    return Number(row!.n);
  }

  describe('forged rows: an integrity violation, nothing written', () => {
    it.each<[string, ImportKind, object, string]>([
      ['a javascript: photo URL', 'listings', listing({ photo_urls: ['javascript:alert(1)'] }), 'listings_photo_urls_https'],
      ['an http:// photo URL after a valid one', 'listings', listing({ photo_urls: [`${URL_BASE}a.jpg`, 'http://cdn.example.test/b.jpg'] }), 'listings_photo_urls_https'],
      ['a photo URL the WHATWG parser forgives (https:host)', 'listings', listing({ photo_urls: ['https:cdn.example.test/a.jpg'] }), 'listings_photo_urls_https'],
      ['a photo URL without a host', 'listings', listing({ photo_urls: ['https:///a.jpg'] }), 'listings_photo_urls_https'],
      ['a photo URL with a space', 'listings', listing({ photo_urls: [`${URL_BASE}a b.jpg`] }), 'listings_photo_urls_https'],
      ['a photo URL with a no-break space', 'listings', listing({ photo_urls: [`${URL_BASE}a\u00a0b.jpg`] }), 'listings_photo_urls_https'],
      ['a photo URL with a backslash', 'listings', listing({ photo_urls: ['https://cdn.example.test\\a.jpg'] }), 'listings_photo_urls_https'],
      ['a photo URL of 2,049 characters', 'listings', listing({ photo_urls: [`${URL_BASE}${'p'.repeat(2_049 - URL_BASE.length)}`] }), 'listings_photo_urls_https'],
      ['a null photo URL', 'listings', listing({ photo_urls: [`${URL_BASE}a.jpg`, null] }), 'listings_photo_urls_https'],
      ['a javascript: thumbnail', 'listings', listing({ thumbnail_url: 'javascript:alert(1)' }), 'listings_thumbnail_url_https'],
      ['a tag of 81 characters', 'listings', listing({ tags: ['ok', 't'.repeat(81)] }), 'listings_tags_length'],
      ['a tag of 81 emoji', 'listings', listing({ tags: [DRAGON.repeat(81)] }), 'listings_tags_length'],
      ['a null tag', 'listings', listing({ tags: [null] }), 'listings_tags_length'],
      ['an external_id with a control character', 'listings', listing({ external_id: 'SKU\u0007' }), 'listings_external_id_characters'],
      ['an external_id with a C1 control character', 'listings', listing({ external_id: 'SKU\u009b2J' }), 'listings_external_id_characters'],
      ['an external_id with a bidirectional override', 'listings', listing({ external_id: '\u202eSKU' }), 'listings_external_id_characters'],
      ['an external_id with a newline', 'listings', listing({ external_id: 'SKU\n1' }), 'listings_external_id_characters'],
      ['an external_id with a space at the start', 'listings', listing({ external_id: ' SKU' }), 'listings_external_id_characters'],
      ['an external_id with an ideographic space at the end', 'listings', listing({ external_id: 'SKU\u3000' }), 'listings_external_id_characters'],
      ['an external_id of spaces only', 'listings', listing({ external_id: '   ' }), 'listings_external_id_characters'],
      ['a template_id of 201 characters', 'machines', machine({ template_id: 't'.repeat(201) }), 'machines_identifiers_length'],
      ['a manufacturer of 201 emoji', 'machines', machine({ manufacturer: DRAGON.repeat(201) }), 'machines_identifiers_length'],
      ['a model of 201 characters', 'machines', machine({ model: 'm'.repeat(201) }), 'machines_identifiers_length'],
      ['a model_number of 201 characters', 'machines', machine({ model_number: '9'.repeat(201) }), 'machines_identifiers_length'],
      ['101 capabilities', 'machines', machine({ capabilities: Array.from({ length: 101 }, (_, i) => `cap-${i}`) }), 'machines_capabilities_size'],
      ['a capability of 81 characters', 'machines', machine({ capabilities: ['fdm', 'c'.repeat(81)] }), 'machines_capabilities_size'],
      ['a null capability', 'machines', machine({ capabilities: [null] }), 'machines_capabilities_size'],
      ['an external_id with a bidirectional isolate', 'machines', machine({ external_id: 'asset\u2066-7' }), 'machines_external_id_characters'],
      ['an external_id with a trailing tab', 'machines', machine({ external_id: 'asset-7\t' }), 'machines_external_id_characters'],
    ])('%s (%s)', async (_case, kind, forged, constraint) => {
      const valid = kind === 'listings' ? listing() : machine();
      const input = importOf(kind, [valid, forged]);

      await expect(writeImport(db.sql, input)).rejects.toMatchObject({ code: '23514', constraint_name: constraint });

      expect(await written(input.importId)).toBe(0);
    });

    it('refuses a forged update by external_id, and leaves the stored row as it was', async () => {
      const stored = listing({ external_id: 'SKU-forged-update' });
      await writeImport(db.sql, importOf('listings', [stored], true));
      const input = importOf('listings', [{ ...stored, ...photo('javascript:alert(1)') }], true);

      await expect(writeImport(db.sql, input)).rejects.toMatchObject({ code: '23514', constraint_name: 'listings_photo_urls_https' });

      expect(await db.sql`select photo_urls from listings where external_id = 'SKU-forged-update'`).toEqual([{ photo_urls: stored.photo_urls }]);
    });
  });

  describe('rows the row rules accept at their limits are stored', () => {
    /** The row as the row rules leave it; fails the test if they refuse it. */
    function accepted<Row>(schema: typeof ListingRowSchema | typeof MachineRowSchema, row: Record<string, unknown>): Row {
      const result = schema.safeParse(row);
      expect(result.error?.issues ?? []).toEqual([]);
      return result.data as Row;
    }

    it.each<[string, Record<string, unknown>]>([
      [
        '8 photo URLs of 2,048 characters (of 100 sent) and 10 tags of 80 emoji',
        validListing({
          photo_urls: Array.from({ length: 100 }, (_, i) => `HTTPS://CDN.EXAMPLE.TEST/${i}/${'p'.repeat(2_048 - URL_BASE.length - `${i}/`.length)}`),
          tags: Array.from({ length: 100 }, () => DRAGON.repeat(80)),
        }),
      ],
      ['photo URLs with a query, a fragment, a port, user info and characters a path may hold', validListing({
        photo_urls: [`${URL_BASE}?q=[]{}`, 'https://cdn.example.test#top', 'https://user:pw@cdn.example.test:443/a.jpg', `https://\u00a1.example/${DRAGON}\u0085'";.png`],
      })],
      ['an external_id of 100 emoji', validListing({ external_id: DRAGON.repeat(100) })],
      ['an external_id trimmed of spaces, with a zero-width joiner and a no-break space inside', validListing({ external_id: ' \u3000SKU\u200d-\u00a0-1\ufeff ' })],
      ['blank tags and no tags at all', validListing({ tags: ['', ' '] })],
    ])('listings: %s', async (_case, row) => {
      const input = importOf('listings', [accepted<ListingRow>(ListingRowSchema, row)]);
      expect(await writeImport(db.sql, input)).toEqual({ inserted: 1, skipped: 0, errors: [] });
    });

    it.each<[string, Record<string, unknown>]>([
      ['identifiers of 200 emoji', validMachine({ template_id: DRAGON.repeat(200), manufacturer: DRAGON.repeat(200), model: 'm'.repeat(200), model_number: DRAGON.repeat(200) })],
      ['100 capabilities of 80 emoji', validMachine({ capabilities: Array.from({ length: 100 }, () => DRAGON.repeat(80)) })],
      ['no model_number and no capabilities', validMachine({ model_number: null, capabilities: null })],
      ['an external_id of 100 characters', validMachine({ external_id: 'x'.repeat(100) })],
    ])('machines: %s', async (_case, row) => {
      const input = importOf('machines', [accepted<MachineRow>(MachineRowSchema, row)]);
      expect(await writeImport(db.sql, input)).toEqual({ inserted: 1, skipped: 0, errors: [] });
    });

    it.each<ImportKind>(['listings', 'machines'])('%s: every request the row rules accept is stored (property)', async (kind) => {
      await fc.assert(
        fc.asyncProperty(rowArbitraries(kind, jsonFieldValue).rows, async (rows) => {
          // note: through JSON, as a request arrives and as the queue carries it
          const request = checkImportBody(kind, JSON.parse(JSON.stringify({ [kind]: rows })));
          if (isImportRefusal(request)) return;
          const input = importOf(kind, request.rows, request.matchExternalIds);
          await expect(writeImport(db.sql, input)).resolves.toMatchObject({ skipped: 0 });
        }),
        { numRuns: 300 },
      );
    }, 120_000);
  });
});
