import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { checkImportBody } from '../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../src/api/import/import-refusal.js';
import { importRefusalError } from '../../src/api/import/import-error-replies.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';
import { LISTING_FIELDS, MACHINE_FIELDS, char16, jsonFieldValue, rowArbitraries, RULES } from '../support/hostile-rows.js';
import { rowError } from '../support/row-errors.js';

// ---------------------------------------------------------------------------------------------
// Through HTTP
// ---------------------------------------------------------------------------------------------

const PATHS: Record<ImportKind, string> = { listings: '/v1/api/listings/bulk', machines: '/v1/api/machines/bulk' };
const ALLOWED_STATUSES = [201, 400, 413, 415];
const JSON_CONTENT_TYPE = /^application\/json/;

interface BulkReply {
  inserted: number;
  skipped: number;
  errors: { index: number; reason: string }[];
}

/** Rotates to a fresh account every `perAccount` requests: an enterprise account allows 300 a minute. */
class KeyPool {
  readonly accounts: TestAccount[] = [];
  private key = '';
  private used = 0;

  constructor(
    private readonly service: TestService,
    private readonly perAccount = 250,
  ) {}

  async next(): Promise<{ account: TestAccount; key: string }> {
    if (this.accounts.length === 0 || this.used >= this.perAccount) {
      const account = await this.service.createAccount({ tier: 'enterprise' });
      this.key = await this.service.createKey(account);
      this.accounts.push(account);
      this.used = 0;
    }
    this.used += 1;
    return { account: this.accounts.at(-1)!, key: this.key };
  }
}

/** The reply is JSON with an error text, or a bulk result; never a 5xx. */
function expectCleanReply(res: LightMyRequestResponse): unknown {
  expect(ALLOWED_STATUSES, `status ${res.statusCode}: ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  expect(res.headers['content-type']).toMatch(JSON_CONTENT_TYPE);
  const body: unknown = JSON.parse(res.body);
  if (res.statusCode === 201) {
    const sync = typeof body === 'object' && body !== null && 'updated' in body ? { updated: expect.any(Number), unchanged: expect.any(Number) } : {};
    expect(body).toEqual({ inserted: expect.any(Number), ...sync, skipped: expect.any(Number), errors: expect.any(Array), import_id: expect.any(String) });
  } else {
    expect(body).toMatchObject({ error: expect.any(String) });
  }
  return body;
}

/** Postgres stores text as UTF-8, where a lone surrogate can only become U+FFFD. */
const asStoredText = (value: string) => Buffer.from(value, 'utf8').toString('utf8');

function canonical(row: Record<string, unknown>, fields: readonly string[]): string {
  return JSON.stringify(fields.map((field) => row[field]), (_key, value: unknown) => (typeof value === 'string' ? asStoredText(value) : value));
}

const LISTING_COLUMNS = [...LISTING_FIELDS, 'thumbnail_url', 'account_id'] as const;
const MACHINE_COLUMNS = [...MACHINE_FIELDS, 'account_id'] as const;

describe('POST /v1/api/listings/bulk and /v1/api/machines/bulk with hostile bodies', () => {
  let service: TestService;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    service = await startTestService();
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await service?.close();
  });

  function send(key: string, path: string, payload: string | Buffer, contentType = 'application/json') {
    return service.request({ method: 'POST', url: path, headers: { ...bearer(key), 'content-type': contentType }, payload });
  }

  function serverErrorLogs(): unknown[] {
    return service.logs.filter((line) => typeof line.level === 'number' && line.level >= 50);
  }

  async function rowsOfRequest(kind: ImportKind, requestId: string): Promise<Record<string, unknown>[]> {
    return kind === 'listings'
      ? service.sql`select r.* from listings r join imports i on i.job_id = r.import_job_id where i.request_id = ${requestId}`
      : service.sql`select r.* from machines r join imports i on i.job_id = r.import_job_id where i.request_id = ${requestId}`;
  }

  async function storedRows(kind: ImportKind, accounts: TestAccount[]): Promise<Record<string, unknown>[]> {
    const ids = accounts.map((a) => a.id);
    return kind === 'listings'
      ? service.sql`select * from listings where account_id = any(${ids}::uuid[])`
      : service.sql`select * from machines where account_id = any(${ids}::uuid[])`;
  }

  describe.each<[ImportKind, number]>([
    ['listings', 700],
    ['machines', 600],
  ])('%s: arbitrary JSON bodies', (kind, numRuns) => {
    it(
      'answers 201/400/413/415 with JSON, writes exactly the valid rows, and every stored row keeps the rules',
      async () => {
        const pool = new KeyPool(service);
        const { rows } = rowArbitraries(kind, jsonFieldValue);
        const bodyArb = fc.oneof(
          { weight: 8, arbitrary: rows.map((r) => ({ [kind]: r })) },
          { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }) },
          { weight: 1, arbitrary: fc.record({ [kind]: fc.jsonValue({ maxDepth: 3 }) }) },
        );
        // what each account should hold: rows by external_id (matched, updated in place) or by
        // a key of their own (always created), each as its canonical text
        const model = new Map<string, Map<string, string>>();
        let unmatched = 0;
        const columns = kind === 'listings' ? LISTING_COLUMNS : MACHINE_COLUMNS;
        const errorLogsBefore = serverErrorLogs().length;

        await fc.assert(
          fc.asyncProperty(bodyArb, async (body) => {
            const { account, key } = await pool.next();
            const payload = JSON.stringify(body);
            const res = await send(key, PATHS[kind], payload);
            const reply = expectCleanReply(res);

            // The server's verdict is the row rules' verdict on the same JSON.
            const local = checkImportBody(kind, JSON.parse(payload));
            const poisoned = /"(__proto__|constructor)"/.test(payload);
            if (res.statusCode === 201) {
              if (isImportRefusal(local)) expect.fail(`answered 201, but the row rules refuse the body: ${local.refused}`);
              const accepted = local;
              const held = model.get(account.id) ?? new Map<string, string>();
              model.set(account.id, held);
              const counts = { inserted: 0, updated: 0, unchanged: 0 };
              const sent: string[] = [];
              for (const row of accepted.rows) {
                const text = canonical({ ...row, external_id: row.external_id ?? null, account_id: account.id }, columns);
                const id = row.external_id === undefined ? `unmatched ${(unmatched += 1)}` : `id ${row.external_id}`;
                const before = held.get(id);
                counts[before === undefined ? 'inserted' : before === text ? 'unchanged' : 'updated'] += 1;
                if (before !== text) sent.push(text);
                held.set(id, text);
              }
              const sync = accepted.matchExternalIds ? { updated: counts.updated, unchanged: counts.unchanged } : {};
              expect(reply as BulkReply).toEqual({ inserted: counts.inserted, ...sync, skipped: accepted.errors.length, errors: accepted.errors, import_id: expect.any(String) });
              // Checked per request, so that fast-check can shrink a failure to a small body: the
              // rows this import created or changed (an unchanged row keeps its earlier import).
              const written = await rowsOfRequest(kind, String(res.headers['x-request-id']));
              for (const row of written) expect(RULES[kind](row)).toEqual([]);
              expect(written.map((row) => canonical(row, columns)).sort()).toEqual(sent.sort());
            } else if (!poisoned) {
              if (!isImportRefusal(local)) expect.fail(`answered ${res.statusCode}, but the row rules accept the body`);
              const refusal = importRefusalError(local);
              expect(res.statusCode).toBe(refusal.statusCode);
              expect(reply).toEqual(refusal.body);
            }
          }),
          { numRuns },
        );

        const stored = await storedRows(kind, pool.accounts);
        for (const row of stored) expect(RULES[kind](row), JSON.stringify(row).slice(0, 500)).toEqual([]);
        if (kind === 'machines') expect(stored.every((row) => row.verification_status === 'pending')).toBe(true);
        const expected = [...model.values()].flatMap((held) => [...held.values()]);
        expect(stored.map((row) => canonical(row, columns)).sort()).toEqual(expected.sort());
        expect(serverErrorLogs().slice(errorLogsBefore)).toEqual([]);
        expect(unhandled).toEqual([]);
      },
      60_000,
    );
  });

  it(
    'answers arbitrary bytes, broken JSON and other content types with JSON, never a 5xx',
    async () => {
      const pool = new KeyPool(service);
      const validBody = JSON.stringify({ listings: [validListing(), validListing()] });
      const payloadArb = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.string({ unit: char16, maxLength: 100 }),
        fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
        fc.nat({ max: validBody.length - 1 }).map((cut) => validBody.slice(0, cut)),
        fc.tuple(fc.nat({ max: validBody.length - 1 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 5 })).map(
          ([at, junk]) => `${validBody.slice(0, at)}${junk}${validBody.slice(at)}`,
        ),
      );
      const contentTypeArb = fc.constantFrom(
        'application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain',
        'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json',
      );
      const errorLogsBefore = serverErrorLogs().length;

      await fc.assert(
        fc.asyncProperty(fc.constantFrom<ImportKind>('listings', 'machines'), payloadArb, contentTypeArb, async (kind, payload, contentType) => {
          const { key } = await pool.next();
          const res = await send(key, PATHS[kind], payload, contentType);
          expectCleanReply(res);
          // note: a cut or spliced valid body may still parse; then it is judged like any other.
          if (res.statusCode === 201) expect(typeof payload === 'string' && contentType.startsWith('application/json')).toBe(true);
        }),
        { numRuns: 300 },
      );

      expect(serverErrorLogs().slice(errorLogsBefore)).toEqual([]);
      expect(unhandled).toEqual([]);
    },
    60_000,
  );
});

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

const HOSTILE = {
  sql: "'; drop table listings; --",
  sqlMachines: "x'); delete from machines where ('1'='1",
  dollar: '$1 $2::text $$quoted$$ $tag$',
  backslash: 'C:\\path\\to\\file \\x00 \\\\ \\n',
  quotes: `"double" 'single' \`back\``,
  emoji: '\u{1F409}\u{1F525} \u{1F469}\u200d\u{1F469}\u200d\u{1F467}\u200d\u{1F466} \u{1F3F3}\ufe0f\u200d\u{1F308} \u{1F1EF}\u{1F1F5}',
  rtl: '\u202eabc \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd\u202c',
  zeroWidth: 'a\u200db\u200cc\u200bd\u2060e\ufeffz',
  combining: 'e\u0301 Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307',
  format: '%s %d %n {0} ${x} <script>alert(1)</script>',
  nullWord: 'NULL',
  braces: '{a,b} {"c":1} ()',
} as const;

describe('POST /v1/api/listings/bulk and /v1/api/machines/bulk: hostile examples', () => {
  let service: TestService;
  let account: TestAccount;
  let key: string;

  beforeAll(async () => {
    service = await startTestService();
    account = await service.createAccount({ tier: 'global' });
    key = await service.createKey(account);
  });
  afterAll(async () => {
    await service?.close();
  });

  function post(kind: ImportKind, payload: object, headers: Record<string, string> = {}) {
    return service.request({ method: 'POST', url: PATHS[kind], headers: { ...bearer(key), ...headers }, payload });
  }

  function postRaw(kind: ImportKind, payload: string | Buffer, headers: Record<string, string> = {}) {
    return service.request({
      method: 'POST',
      url: PATHS[kind],
      headers: { ...bearer(key), 'content-type': 'application/json', ...headers },
      payload,
    });
  }

  async function listingsTitled(title: string) {
    return service.sql`
      select title, description, material, color, tags, photo_urls, thumbnail_url
      from listings where account_id = ${account.id} and title = ${title}`;
  }

  async function counts(): Promise<{ listings: number; machines: number; imports: number }> {
    const [row] = await service.sql<{ listings: number; machines: number; imports: number }[]>`
      select (select count(*)::int from listings) as listings, (select count(*)::int from machines) as machines,
             (select count(*)::int from imports) as imports`;
    return row!;
  }

  function nested(depth: number, open = '[', close = ']'): string {
    return `${open.repeat(depth)}${close.repeat(depth)}`;
  }

  function nestedObjects(depth: number): string {
    return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  }

  /** A listings body whose single valid row carries `raw` JSON text in `field`. */
  function listingWith(field: string, raw: string): string {
    const row = JSON.stringify(validListing({ title: `deep ${field} ${raw.length}` }));
    return `{"listings":[${row.slice(0, -1)},"${field}":${raw}}]}`;
  }

  describe('stored verbatim', () => {
    it('stores SQL metacharacters, emoji, right-to-left and zero-width text in listings exactly as sent', async () => {
      const title = HOSTILE.sql;
      const sent = {
        title,
        description: Object.values(HOSTILE).join('\n'),
        material: HOSTILE.rtl,
        color: HOSTILE.emoji,
        tags: [HOSTILE.dollar, HOSTILE.backslash, HOSTILE.quotes, HOSTILE.zeroWidth, HOSTILE.combining, HOSTILE.format, HOSTILE.nullWord, HOSTILE.braces, HOSTILE.sqlMachines, HOSTILE.rtl],
        photo_urls: ["https://cdn.example.test/it's%20here.jpg?q=';drop", 'https://cdn.example.test/\u{1F409}.png'],
      };

      const res = await post('listings', { listings: [validListing(sent)] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
      expect(await listingsTitled(title)).toEqual([{ ...sent, thumbnail_url: sent.photo_urls[0] }]);
      expect((await counts()).listings).toBeGreaterThan(0);
    });

    it('stores SQL metacharacters, emoji, right-to-left and zero-width text in machines exactly as sent', async () => {
      const sent = {
        template_id: HOSTILE.sqlMachines,
        category: HOSTILE.dollar,
        manufacturer: HOSTILE.backslash,
        model: HOSTILE.rtl,
        model_number: HOSTILE.quotes,
        nickname: HOSTILE.emoji,
        capabilities: Object.values(HOSTILE),
      };

      const res = await post('machines', { machines: [sent] });

      expect(res.statusCode).toBe(201);
      const stored = await service.sql`
        select template_id, category, manufacturer, model, model_number, nickname, capabilities
        from machines where account_id = ${account.id} and template_id = ${sent.template_id}`;
      expect(stored).toEqual([sent]);
    });

    it('stores a value with zero-width and bidi characters at both ends unchanged (only whitespace is trimmed)', async () => {
      const title = '\u200b\u202eedge\u202c\u200d';
      const res = await post('listings', { listings: [validListing({ title })] });

      expect(res.statusCode).toBe(201);
      expect(await listingsTitled(title)).toHaveLength(1);
    });

    it('stores a very long title and description cut to 120 and 2,000 code points of what was sent', async () => {
      const title = `${HOSTILE.rtl}${'\u{1F409}'.repeat(200_000)}`;
      const description = `${HOSTILE.sql}${'\u05e9'.repeat(400_000)}`;

      const res = await post('listings', { listings: [validListing({ title, description })] });

      expect(res.statusCode).toBe(201);
      const expectedTitle = [...title].slice(0, 120).join('');
      const [row] = await listingsTitled(expectedTitle);
      expect(row?.description).toBe([...description].slice(0, 2_000).join(''));
    });

    it('refuses a 200,000-character template_id as a row error, and stores one of 200 whole', async () => {
      const tooLong = `${HOSTILE.sqlMachines}${'\u{1F409}'.repeat(200_000)}`;
      const template_id = `${HOSTILE.sqlMachines}${'\u{1F409}'.repeat(200 - [...HOSTILE.sqlMachines].length)}`;

      const res = await post('machines', { machines: [validMachine({ template_id: tooLong }), validMachine({ template_id })] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [rowError(0, 'template_id: must be at most 200 characters', 'too_long')], import_id: expect.any(String) });
      const [row] = await service.sql`select char_length(template_id)::int as length, template_id = ${template_id} as same from machines where account_id = ${account.id} and md5(template_id) = md5(${template_id})`;
      expect(row).toEqual({ length: 200, same: true });
    });
  });

  describe('photo URLs the WHATWG parser forgives', () => {
    it.each([
      ['no slashes after https:', 'https:cdn.example.test/x.jpg'],
      ['one slash after https:', 'https:/cdn.example.test/x.jpg'],
      ['backslashes', 'https:\\\\cdn.example.test\\x.jpg'],
      ['an empty authority (four slashes)', 'https:////cdn.example.test/x.jpg'],
      ['a newline in the host', 'https://cdn.exa\nmple.test/x.jpg'],
      ['a tab in the path', 'https://cdn.example.test/a\tb.jpg'],
    ])('refuses a photo URL with %s as a per-row error instead of storing it as sent', async (_name, url) => {
      const res = await post('listings', { listings: [validListing({ photo_urls: [url] }), validListing()] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [rowError(0, 'photo_urls[0]: must be an absolute https:// URL', 'invalid_url')], import_id: expect.any(String) });
    });
  });

  describe('NUL characters', () => {
    it.each([
      ['title', { title: 'a\u0000b' }, 'title: must not contain NUL characters'],
      ['description', { description: '\u0000' }, 'description: must not contain NUL characters'],
      ['material', { material: 'PLA\u0000' }, 'material: must not contain NUL characters'],
      ['color', { color: '\u0000red' }, 'color: must not contain NUL characters'],
      ['a tag', { tags: ['ok', 'b\u0000d'] }, 'tags[1]: must not contain NUL characters'],
      ['a photo URL', { photo_urls: ['https://cdn.example.test/a\u0000.jpg'] }, 'photo_urls[0]: must not contain NUL characters'],
    ])('in the listing field %s: a per-row error, the other row is created', async (_name, overrides, reason) => {
      const res = await post('listings', { listings: [validListing(overrides), validListing()] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [rowError(0, reason, 'invalid_characters')], import_id: expect.any(String) });
    });

    it.each([
      ['template_id', { template_id: 'tpl\u0000' }, 'template_id: must not contain NUL characters'],
      ['model_number', { model_number: '\u0000' }, 'model_number: must not contain NUL characters'],
      ['nickname', { nickname: 'n\u0000' }, 'nickname: must not contain NUL characters'],
      ['a capability', { capabilities: ['\u0000'] }, 'capabilities[0]: must not contain NUL characters'],
    ])('in the machine field %s: a per-row error, the other row is created', async (_name, overrides, reason) => {
      const res = await post('machines', { machines: [validMachine(overrides), validMachine()] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [rowError(0, reason, 'invalid_characters')], import_id: expect.any(String) });
    });

    it('in the only row: 400 no valid rows naming the field, nothing written', async () => {
      const before = await counts();

      const res = await post('listings', { listings: [validListing({ title: '\u0000' })] });

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [rowError(0, 'title: must not contain NUL characters', 'invalid_characters')] });
      expect(await counts()).toEqual(before);
    });

    it('as a raw NUL byte inside a JSON string (not escaped): 400 Invalid JSON body', async () => {
      const body = JSON.stringify({ listings: [validListing({ title: 'RAWNUL' })] }).replace('RAWNUL', 'a\u0000b');

      const res = await postRaw('listings', body);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid JSON body', code: 'invalid_json' });
    });
  });

  describe('deeply nested and huge JSON', () => {
    it('accepts a row with a 10,000-deep nested array in an unknown field and ignores the field', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(10_000)));

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
    });

    it('accepts a row with a 10,000-deep nested object in an unknown field', async () => {
      const res = await postRaw('listings', listingWith('extra', nestedObjects(10_000)));

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
    });

    it('accepts a row with a 10,000-deep nested array in an unknown field when an Idempotency-Key is sent', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(10_000)), { 'idempotency-key': 'deep-nesting' });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
    });

    it.each([
      ['title', 'title: must be a string'],
      ['tags', 'tags[0]: must be a string'],
      ['photo_urls', 'photo_urls[0]: must be an absolute https:// URL'],
      ['price_cents', 'price_cents: must be a whole number'],
    ])('answers a 10,000-deep nested array in %s with 400 naming the field', async (field, reason) => {
      const before = await counts();

      const res = await postRaw('listings', listingWith(field, nested(10_000)));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [rowError(0, reason, 'wrong_type')] });
      expect(await counts()).toEqual(before);
    });

    it('answers a 10,000-deep nested array as the row with 400 row must be an object', async () => {
      const res = await postRaw('machines', `{"machines":[${nested(10_000)}]}`);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [rowError(0, 'row must be an object', 'not_an_object')] });
    });

    it('answers a 10,000-deep nested array as the whole body with 400', async () => {
      const res = await postRaw('machines', nested(10_000));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Body must be an object with a "machines" array', code: 'missing_rows_array' });
    });

    it('answers a 500,000-deep nested array (about 1 MB) in an unknown field with JSON, not a 5xx', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(500_000)));

      expect([201, 400]).toContain(res.statusCode);
      expect(res.json()).toMatchObject(res.statusCode === 201 ? { inserted: 1 } : { error: expect.any(String) });
    });

    it.each<[ImportKind, number]>([
      ['listings', 2_097_152],
      ['machines', 1_048_576],
    ])('answers %s nesting one byte over the %d-byte limit with 413 and writes nothing', async (kind, limit) => {
      const before = await counts();
      const prefix = `{"${kind}":[`;
      const depth = (limit + 1 - prefix.length - 2) / 2;
      const body = `${prefix}${nested(Math.floor(depth))}${depth % 1 === 0 ? '' : ' '}]}`;
      expect(Buffer.byteLength(body)).toBe(limit + 1);

      const res = await postRaw(kind, body);

      expect(res.statusCode).toBe(413);
      expect(res.json()).toEqual({ error: 'Request body too large', code: 'body_too_large', limit_bytes: limit });
      expect(await counts()).toEqual(before);
    });

    it('answers 1,000,000 rows within the byte limit with 400 and received', async () => {
      const res = await postRaw('listings', `{"listings":[${Array(1_000_000).fill('0').join(',')}]}`);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Too many rows: at most 200 listings per request', code: 'too_many_rows', received: 1_000_000 });
    });

    it('answers 100,000 keys in one row with 201 and stores only the known fields', async () => {
      const extra = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
      const row = validListing({ title: 'many keys', ...extra });

      const res = await post('listings', { listings: [row] });

      expect(res.statusCode).toBe(201);
      expect(await listingsTitled('many keys')).toHaveLength(1);
    });
  });

  describe('arrays beyond their cap of 100 entries', () => {
    /** A body of one row of `kind` whose `field` holds 250,000 integers (about 500 KB), as raw JSON text. */
    function rowWithIntegers(kind: ImportKind, field: string): string {
      const row = JSON.stringify(kind === 'listings' ? validListing() : validMachine());
      return `{"${kind}":[${row.slice(0, -1)},"${field}":[${Array<string>(250_000).fill('1').join(',')}]}]}`;
    }

    it.each<[ImportKind, string]>([
      ['listings', 'tags'],
      ['listings', 'photo_urls'],
      ['machines', 'capabilities'],
    ])('answers one %s row with 250,000 integers in %s with 400 and a small error naming the field, and writes nothing', async (kind, field) => {
      const before = await counts();

      const res = await postRaw(kind, rowWithIntegers(kind, field));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [rowError(0, `${field}: at most 100 entries`, 'too_many_items')] });
      expect(res.body.length).toBeLessThan(2_048);
      expect(await counts()).toEqual(before);
    });
  });

  describe('lone surrogates sent as JSON escapes', () => {
    const NOT_UNICODE = 'must be valid Unicode text';

    /** A body of `rows` whose "MARK" values are replaced by `escaped`, raw JSON text such as `SKU\ud800`. */
    function withEscape(kind: ImportKind, rows: object[], escaped: string): string {
      return JSON.stringify({ [kind]: rows }).replaceAll('MARK', escaped);
    }

    it('refuses external_id "SKU\\ud800" and then "SKU\\udfff" naming the field, instead of storing both as one id', async () => {
      const before = await counts();

      for (const escaped of ['SKU\\ud800', 'SKU\\udfff']) {
        const res = await postRaw('listings', withEscape('listings', [validListing({ external_id: 'MARK' })], escaped));

        expect(res.statusCode, escaped).toBe(400);
        expect(res.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [rowError(0, `external_id: ${NOT_UNICODE}`, 'invalid_characters')] });
      }
      expect(await counts()).toEqual(before);
      expect(await service.sql`select external_id from listings where external_id like 'SKU%'`).toEqual([]);
    });

    it.each<[ImportKind, string, Record<string, unknown>]>([
      ['listings', 'title', { title: 'Dragon MARK' }],
      ['listings', 'tags[1]', { tags: ['ok', 'MARK'] }],
      ['listings', 'photo_urls[0]', { photo_urls: ['https://cdn.example.test/MARK.jpg'] }],
      ['machines', 'model', { model: 'MARK' }],
      ['machines', 'capabilities[0]', { capabilities: ['MARK'] }],
    ])('in the %s field %s: a per-row error, the other row is created', async (kind, field, overrides) => {
      const valid = kind === 'listings' ? validListing : validMachine;

      const res = await postRaw(kind, withEscape(kind, [valid(overrides), valid()], 'x\\udc00y'));

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [rowError(0, `${field}: ${NOT_UNICODE}`, 'invalid_characters')], import_id: expect.any(String) });
    });
  });

  describe('malformed UTF-8', () => {
    const valid = () => JSON.stringify({ listings: [validListing({ title: 'BROKEN' })] });
    const withBytes = (bytes: number[]) => {
      const [before, after] = valid().split('BROKEN') as [string, string];
      return Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]);
    };

    it('answers invalid bytes between JSON tokens with 400 Invalid JSON body', async () => {
      const res = await postRaw('listings', Buffer.concat([Buffer.from('{"listings":'), Buffer.from([0xff, 0xfe]), Buffer.from('[]}')]));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid JSON body', code: 'invalid_json' });
    });

    it.each([
      ['0xFF 0xFE', [0x61, 0xff, 0xfe, 0x62]],
      ['a truncated sequence', [0x61, 0xe2, 0x82]],
      ['an overlong encoding of "/"', [0xc0, 0xaf]],
      ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80]],
    ])('answers %s inside a string value with 400 Invalid JSON body and writes nothing', async (_name, bytes) => {
      const before = await counts();

      const res = await postRaw('listings', withBytes(bytes));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid JSON body', code: 'invalid_json' });
      expect(await counts()).toEqual(before);
    });
  });
});
