import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/shared/errors/api-error.js';
import { BULK_KINDS, type BulkKind } from '../../src/shared/bulk/bulk-kinds.js';
import { validateBulkRequest } from '../../src/shared/bulk/bulk-request.js';
import { codePointLength, POSTGRES_INT_MAX } from '../../src/shared/rows/field-schemas.js';
import { LISTING_CATEGORIES, ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { StoredListingSchema, StoredMachineSchema } from '../support/stored-rows.js';
import { validateRows } from '../../src/shared/rows/validate-rows.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

// ---------------------------------------------------------------------------------------------
// Arbitraries: hostile strings, numbers and URLs, valid-looking rows with hostile content, valid
// rows with one to three fields replaced, and anything at all.
// ---------------------------------------------------------------------------------------------

const LISTING_FIELDS = [
  'title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls', 'color', 'tags',
  'print_time_hours', 'is_available', 'allows_custom_orders',
] as const;
const MACHINE_FIELDS = [
  'template_id', 'category', 'manufacturer', 'model', 'model_number', 'nickname', 'capabilities', 'is_skill_station',
] as const;
/** Columns the server fills in; a row carrying them must never set them. */
const SERVER_OWNED_FIELDS = ['id', 'account_id', 'import_job_id', 'maker_name', 'maker_photo_url', 'thumbnail_url', 'verification_status', 'created_at', 'extra'];

const SPECIAL_STRINGS = [
  '', ' ', '\t\n', '\u00a0', '\u200b', '\ufeff', '\u3000', '\u0000', 'a\u0000b', 'NULL', 'null', 'undefined', 'true', '0', '-1',
  "'; drop table listings; --", "' or '1'='1", '$1', '$$', '\\', '\\x00', '\\u0000', '"', "'", '{a,b}', '{"a":1}', '%s%n',
  '<script>alert(1)</script>', '\u202eevil', '\u05e9\u05dc\u05d5\u05dd', '\u0645\u0631\u062d\u0628\u0627', '\u{1F469}\u200d\u{1F469}\u200d\u{1F467}',
  '\u{1F409}', 'e\u0301', '\ud800', '\udc00', 'x\udbff', '\udbff\udfff', 'https://', 'https://a', 'https://cdn.example.test/x.jpg',
  'http://cdn.example.test/x.jpg', 'javascript:alert(1)', '//cdn.example.test/x.jpg', 'https:///nohost', 'HTTPS://CDN.EXAMPLE.TEST/X.JPG',
  ' https://cdn.example.test/pad.jpg ', 'USD', 'usd', ' USD ', 'miniatures', 'Miniatures', 'other', '__proto__', 'constructor',
];

const char16 = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));

const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...SPECIAL_STRINGS),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  // any UTF-16 unit: lone surrogates, NUL and other control characters included
  fc.string({ unit: char16, maxLength: 20 }),
  fc.tuple(fc.constantFrom(' ', '\u3000', '\n\t'), fc.constantFrom(...SPECIAL_STRINGS)).map(([ws, s]) => `${ws}${s}${ws}`),
  // long values around and far beyond every stored length
  fc.tuple(fc.constantFrom('x', '\u00e9', '\u{1F409}', '\u200d', ' ', '\u05e9'), fc.integer({ min: 30, max: 2_100 })).map(([c, n]) => c.repeat(n)),
);

/** Mostly usable text, sometimes hostile. */
const textArb = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.tuple(hostileString, hostileString).map(([a, b]) => `x${a}${b}`) },
);

const numberArb = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 0.5, 2_147_483_647, 2_147_483_648, -2_147_483_648, Number.MAX_SAFE_INTEGER, 1e308, 5e-324, 1e21),
  fc.integer(),
  fc.double(),
  fc.nat(),
);

const urlArb = fc.oneof(
  { weight: 4, arbitrary: fc.webUrl({ validSchemes: ['https'], withQueryParameters: true, withFragments: true }) },
  { weight: 1, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: hostileString },
  { weight: 1, arbitrary: hostileString.map((s) => `https://cdn.example.test/${s}`) },
  { weight: 1, arbitrary: hostileString.map((s) => `https://${s}`) },
);

/** JSON values only: what an HTTP body can carry. */
const jsonFieldValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  numberArb,
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 13 }),
  fc.array(urlArb, { maxLength: 10 }),
  fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }),
);

/** Anything a JavaScript caller could hand the validator. */
const anyFieldValue: fc.Arbitrary<unknown> = fc.oneof(jsonFieldValue, fc.anything({ maxDepth: 2, withNullPrototype: true, withBoxedValues: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }));

function rowArbitraries(kind: BulkKind, value: fc.Arbitrary<unknown>) {
  const plausible =
    kind === 'listings'
      ? fc.record(
          {
            title: textArb,
            description: textArb,
            price_cents: fc.oneof(fc.integer({ min: 0, max: POSTGRES_INT_MAX }), numberArb),
            currency: fc.constantFrom('USD', 'USD', 'USD', 'usd', 'EUR', ''),
            category: fc.constantFrom(...LISTING_CATEGORIES, 'Miniatures', ''),
            material: textArb,
            photo_urls: fc.array(urlArb, { minLength: 1, maxLength: 11 }),
            color: fc.option(textArb),
            tags: fc.option(fc.array(textArb, { maxLength: 13 })),
            print_time_hours: fc.option(numberArb),
            is_available: fc.option(fc.boolean()),
            allows_custom_orders: fc.option(fc.boolean()),
          },
          { requiredKeys: ['title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls'] },
        )
      : fc.record(
          {
            template_id: textArb,
            category: textArb,
            manufacturer: textArb,
            model: textArb,
            model_number: fc.option(textArb),
            nickname: fc.option(textArb),
            capabilities: fc.option(fc.array(textArb, { maxLength: 8 })),
            is_skill_station: fc.option(fc.boolean()),
          },
          { requiredKeys: ['template_id', 'category', 'manufacturer', 'model'] },
        );
  const base: Record<string, unknown> = kind === 'listings' ? validListing() : validMachine();
  const fields: readonly string[] = kind === 'listings' ? LISTING_FIELDS : MACHINE_FIELDS;
  const mutation = fc.tuple(fc.constantFrom(...fields, ...SERVER_OWNED_FIELDS), value, fc.boolean());
  const nearValid = fc.array(mutation, { minLength: 1, maxLength: 3 }).map((mutations) => {
    const row: Record<string, unknown> = { ...base };
    for (const [field, replacement, remove] of mutations) {
      if (remove) delete row[field];
      else row[field] = replacement;
    }
    return row;
  });
  const row = fc.oneof(
    { weight: 3, arbitrary: plausible },
    { weight: 3, arbitrary: nearValid },
    { weight: 1, arbitrary: value },
  );
  return { row, rows: fc.array(row, { maxLength: 10 }) };
}

// ---------------------------------------------------------------------------------------------
// What a stored or normalised row must satisfy: decisions A and the database's rules.
// ---------------------------------------------------------------------------------------------

/** note: not URL.canParse: on Node 20 its optimised fast path answers false for non-ASCII hosts ("https://¡"). */
function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
const isHttpsUrl = (value: string) => {
  const url = parseUrl(value);
  return url !== undefined && url.protocol === 'https:' && url.hostname !== '';
};
/**
 * Stored as sent, so it must read as an absolute https:// URL to any consumer, not only to the
 * forgiving WHATWG parser (which also takes `https:host`, `https:\\host` and strips tabs and newlines).
 */
const hasControlCharacter = (value: string) => [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
const isStoredHttpsUrl = (value: string) => /^https:\/\/[^/\\]/i.test(value) && !hasControlCharacter(value) && isHttpsUrl(value);
const startsTrimmed = (value: string) => value === value.trimStart();

function listingRuleBreaks(row: Record<string, unknown>): string[] {
  const broken: string[] = [];
  const text = (field: string, max: number | undefined, required: boolean) => {
    const value = row[field];
    if (value === null && !required) return;
    if (typeof value !== 'string') return broken.push(`${field} not a string`);
    if (value.length === 0 || (max !== undefined && codePointLength(value) > max)) broken.push(`${field} length`);
    if (value.includes('\u0000') || !startsTrimmed(value)) broken.push(`${field} content`);
  };
  text('title', 120, true);
  text('description', 2_000, true);
  text('material', 80, true);
  text('color', 40, false);
  const price = row.price_cents;
  if (typeof price !== 'number' || !Number.isInteger(price) || price < 0 || price > POSTGRES_INT_MAX) broken.push('price_cents');
  if (row.currency !== 'USD') broken.push('currency');
  if (!(LISTING_CATEGORIES as readonly unknown[]).includes(row.category)) broken.push('category');
  const photos = row.photo_urls;
  if (!Array.isArray(photos) || photos.length < 1 || photos.length > 8) broken.push('photo_urls count');
  else {
    for (const url of photos) {
      if (typeof url !== 'string' || !/^https:\/\//i.test(url) || !isHttpsUrl(url)) broken.push(`photo_urls: not an https:// URL: ${JSON.stringify(url)}`);
    }
    if (row.thumbnail_url !== photos[0]) broken.push('thumbnail_url');
  }
  const tags = row.tags;
  if (!Array.isArray(tags) || tags.length > 10 || !tags.every((t) => typeof t === 'string' && !t.includes('\u0000'))) broken.push('tags');
  const hours = row.print_time_hours;
  if (hours !== null && (typeof hours !== 'number' || !Number.isFinite(hours) || hours < 0)) broken.push('print_time_hours');
  if (typeof row.is_available !== 'boolean' || typeof row.allows_custom_orders !== 'boolean') broken.push('booleans');
  return broken;
}

function machineRuleBreaks(row: Record<string, unknown>): string[] {
  const broken: string[] = [];
  for (const field of ['template_id', 'category', 'manufacturer', 'model', 'model_number', 'nickname']) {
    const value = row[field];
    const optional = field === 'model_number' || field === 'nickname';
    if (value === null && optional) continue;
    if (typeof value !== 'string' || value.length === 0 || value.includes('\u0000') || !startsTrimmed(value)) broken.push(field);
  }
  if (typeof row.category === 'string' && codePointLength(row.category) > 80) broken.push('category length');
  if (typeof row.nickname === 'string' && codePointLength(row.nickname) > 80) broken.push('nickname length');
  const capabilities = row.capabilities;
  if (!Array.isArray(capabilities) || !capabilities.every((c) => typeof c === 'string' && !c.includes('\u0000'))) broken.push('capabilities');
  if (typeof row.is_skill_station !== 'boolean') broken.push('is_skill_station');
  return broken;
}

const STORED_SCHEMAS = { listings: StoredListingSchema, machines: StoredMachineSchema } as const;
const RULES = { listings: listingRuleBreaks, machines: machineRuleBreaks } as const;

describe('row validation (validateRows)', () => {
  describe.each<[BulkKind, number]>([
    ['listings', 3_000],
    ['machines', 3_000],
  ])('%s rows', (kind, numRuns) => {
    const schema = BULK_KINDS[kind].rowSchema;
    const { rows: rowsArb } = rowArbitraries(kind, anyFieldValue);

    it('never throws, and partitions the indices into valid rows (in order) and sorted errors', () => {
      fc.assert(
        fc.property(rowsArb, (input) => {
          const { rows, errors } = validateRows(schema, input);
          expect(rows.length + errors.length).toBe(input.length);
          const failing = errors.map((e) => e.index);
          expect(failing).toEqual([...new Set(failing)].sort((a, b) => a - b));
          expect(failing.every((i) => Number.isInteger(i) && i >= 0 && i < input.length)).toBe(true);
          expect(errors.every((e) => typeof e.reason === 'string' && e.reason.length > 0)).toBe(true);
          // The valid rows are exactly the other indices, in request order.
          const passing = input.map((_, i) => i).filter((i) => !failing.includes(i));
          expect(passing.map((i) => validateRows(schema, [input[i]]).rows[0])).toEqual(rows);
        }),
        { numRuns },
      );
    });

    it('yields only rows that satisfy the stored-row schema and the database rules', () => {
      fc.assert(
        fc.property(rowsArb, (input) => {
          for (const row of validateRows(schema, input).rows) {
            expect(STORED_SCHEMAS[kind].safeParse(row).success).toBe(true);
            expect(RULES[kind](row as Record<string, unknown>)).toEqual([]);
          }
        }),
        { numRuns },
      );
    });

    if (kind === 'listings') {
      it('keeps only photo URLs that read as https:// URLs to any consumer, not only to the WHATWG parser', () => {
        fc.assert(
          fc.property(rowsArb, (input) => {
            for (const row of validateRows(ListingRowSchema, input).rows) {
              expect(row.photo_urls.filter((url) => !isStoredHttpsUrl(url))).toEqual([]);
            }
          }),
          { numRuns },
        );
      });
    }

    it('names only the replaced field in the reason when one field of a valid row is replaced, and ignores unknown fields', () => {
      const base: Record<string, unknown> = kind === 'listings' ? validListing() : validMachine();
      const baseline = validateRows(schema, [base]).rows;
      const fields: readonly string[] = kind === 'listings' ? LISTING_FIELDS : MACHINE_FIELDS;
      fc.assert(
        fc.property(fc.constantFrom(...fields, ...SERVER_OWNED_FIELDS), anyFieldValue, fc.boolean(), (field, value, remove) => {
          const row = { ...base };
          if (remove) delete row[field];
          else row[field] = value;
          const { rows, errors } = validateRows(schema, [row]);
          if (!fields.includes(field)) {
            expect(rows).toEqual(baseline);
            return;
          }
          for (const { reason } of errors) {
            for (const part of reason.split('; ')) expect(part.startsWith(`${field}:`) || part.startsWith(`${field}[`), reason).toBe(true);
          }
        }),
        { numRuns },
      );
    });
  });

  it('validateBulkRequest either returns a partition of the rows or throws a 400 ApiError', () => {
    const listings = rowArbitraries('listings', anyFieldValue);
    const machines = rowArbitraries('machines', anyFieldValue);
    const bodyArb = fc.oneof(
      fc.anything({ maxDepth: 3 }),
      fc.record({ listings: fc.oneof(listings.rows, fc.anything({ maxDepth: 2 })) }),
      fc.record({ machines: fc.oneof(machines.rows, fc.anything({ maxDepth: 2 })) }),
    );
    fc.assert(
      fc.property(fc.constantFrom<BulkKind>('listings', 'machines'), bodyArb, (kind, body) => {
        try {
          const result = validateBulkRequest(kind, body);
          expect(result.rows.length).toBeGreaterThan(0);
          expect(result.rows.length + result.errors.length).toBe(result.total);
        } catch (error) {
          expect(error).toBeInstanceOf(ApiError);
          expect((error as ApiError).statusCode).toBe(400);
        }
      }),
      { numRuns: 3_000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Through HTTP
// ---------------------------------------------------------------------------------------------

const PATHS: Record<BulkKind, string> = { listings: '/v1/api/listings/bulk', machines: '/v1/api/machines/bulk' };
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
    expect(body).toEqual({ inserted: expect.any(Number), skipped: expect.any(Number), errors: expect.any(Array) });
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

  async function rowsOfRequest(kind: BulkKind, requestId: string): Promise<Record<string, unknown>[]> {
    return kind === 'listings'
      ? service.sql`select r.* from listings r join imports i on i.job_id = r.import_job_id where i.request_id = ${requestId}`
      : service.sql`select r.* from machines r join imports i on i.job_id = r.import_job_id where i.request_id = ${requestId}`;
  }

  async function storedRows(kind: BulkKind, accounts: TestAccount[]): Promise<Record<string, unknown>[]> {
    const ids = accounts.map((a) => a.id);
    return kind === 'listings'
      ? service.sql`select * from listings where account_id = any(${ids}::uuid[])`
      : service.sql`select * from machines where account_id = any(${ids}::uuid[])`;
  }

  describe.each<[BulkKind, number]>([
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
        const expected: string[] = [];
        const columns = kind === 'listings' ? LISTING_COLUMNS : MACHINE_COLUMNS;
        const errorLogsBefore = serverErrorLogs().length;

        await fc.assert(
          fc.asyncProperty(bodyArb, async (body) => {
            const { account, key } = await pool.next();
            const payload = JSON.stringify(body);
            const res = await send(key, PATHS[kind], payload);
            const reply = expectCleanReply(res);

            // The server's verdict is the row rules' verdict on the same JSON.
            let local: ReturnType<typeof validateBulkRequest> | ApiError;
            try {
              local = validateBulkRequest(kind, JSON.parse(payload));
            } catch (error) {
              local = error as ApiError;
            }
            const poisoned = /"(__proto__|constructor)"/.test(payload);
            if (res.statusCode === 201) {
              expect(local).not.toBeInstanceOf(ApiError);
              const accepted = local as ReturnType<typeof validateBulkRequest>;
              expect(reply as BulkReply).toEqual({ inserted: accepted.rows.length, skipped: accepted.errors.length, errors: accepted.errors });
              const sent = accepted.rows.map((row) => canonical({ ...row, account_id: account.id }, columns));
              expected.push(...sent);
              // Checked per request, so that fast-check can shrink a failure to a small body.
              const written = await rowsOfRequest(kind, String(res.headers['x-request-id']));
              for (const row of written) expect(RULES[kind](row)).toEqual([]);
              expect(written.map((row) => canonical(row, columns)).sort()).toEqual(sent.sort());
            } else if (!poisoned) {
              expect(local).toBeInstanceOf(ApiError);
              expect(res.statusCode).toBe((local as ApiError).statusCode);
              expect(reply).toEqual((local as ApiError).body);
            }
          }),
          { numRuns },
        );

        const stored = await storedRows(kind, pool.accounts);
        for (const row of stored) expect(RULES[kind](row), JSON.stringify(row).slice(0, 500)).toEqual([]);
        if (kind === 'machines') expect(stored.every((row) => row.verification_status === 'pending')).toBe(true);
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
        fc.asyncProperty(fc.constantFrom<BulkKind>('listings', 'machines'), payloadArb, contentTypeArb, async (kind, payload, contentType) => {
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

  function post(kind: BulkKind, payload: object, headers: Record<string, string> = {}) {
    return service.request({ method: 'POST', url: PATHS[kind], headers: { ...bearer(key), ...headers }, payload });
  }

  function postRaw(kind: BulkKind, payload: string | Buffer, headers: Record<string, string> = {}) {
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
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [] });
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
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [{ index: 0, reason: 'template_id: must be at most 200 characters' }] });
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
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [{ index: 0, reason: 'photo_urls[0]: must be an absolute https:// URL' }] });
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
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [{ index: 0, reason }] });
    });

    it.each([
      ['template_id', { template_id: 'tpl\u0000' }, 'template_id: must not contain NUL characters'],
      ['model_number', { model_number: '\u0000' }, 'model_number: must not contain NUL characters'],
      ['nickname', { nickname: 'n\u0000' }, 'nickname: must not contain NUL characters'],
      ['a capability', { capabilities: ['\u0000'] }, 'capabilities[0]: must not contain NUL characters'],
    ])('in the machine field %s: a per-row error, the other row is created', async (_name, overrides, reason) => {
      const res = await post('machines', { machines: [validMachine(overrides), validMachine()] });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 1, errors: [{ index: 0, reason }] });
    });

    it('in the only row: 400 no valid rows naming the field, nothing written', async () => {
      const before = await counts();

      const res = await post('listings', { listings: [validListing({ title: '\u0000' })] });

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', errors: [{ index: 0, reason: 'title: must not contain NUL characters' }] });
      expect(await counts()).toEqual(before);
    });

    it('as a raw NUL byte inside a JSON string (not escaped): 400 Invalid JSON body', async () => {
      const body = JSON.stringify({ listings: [validListing({ title: 'RAWNUL' })] }).replace('RAWNUL', 'a\u0000b');

      const res = await postRaw('listings', body);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid JSON body' });
    });
  });

  describe('deeply nested and huge JSON', () => {
    it('accepts a row with a 10,000-deep nested array in an unknown field and ignores the field', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(10_000)));

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [] });
    });

    it('accepts a row with a 10,000-deep nested object in an unknown field', async () => {
      const res = await postRaw('listings', listingWith('extra', nestedObjects(10_000)));

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [] });
    });

    it('accepts a row with a 10,000-deep nested array in an unknown field when an Idempotency-Key is sent', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(10_000)), { 'idempotency-key': 'deep-nesting' });

      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [] });
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
      expect(res.json()).toEqual({ error: 'no valid rows', errors: [{ index: 0, reason }] });
      expect(await counts()).toEqual(before);
    });

    it('answers a 10,000-deep nested array as the row with 400 row must be an object', async () => {
      const res = await postRaw('machines', `{"machines":[${nested(10_000)}]}`);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'no valid rows', errors: [{ index: 0, reason: 'row must be an object' }] });
    });

    it('answers a 10,000-deep nested array as the whole body with 400', async () => {
      const res = await postRaw('machines', nested(10_000));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Body must be an object with a "machines" array' });
    });

    it('answers a 500,000-deep nested array (about 1 MB) in an unknown field with JSON, not a 5xx', async () => {
      const res = await postRaw('listings', listingWith('extra', nested(500_000)));

      expect([201, 400]).toContain(res.statusCode);
      expect(res.json()).toMatchObject(res.statusCode === 201 ? { inserted: 1 } : { error: expect.any(String) });
    });

    it.each<[BulkKind, number]>([
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
      expect(res.json()).toEqual({ error: 'Request body too large', limit_bytes: limit });
      expect(await counts()).toEqual(before);
    });

    it('answers 1,000,000 rows within the byte limit with 400 and received', async () => {
      const res = await postRaw('listings', `{"listings":[${Array(1_000_000).fill('0').join(',')}]}`);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Too many rows: at most 200 listings per request', received: 1_000_000 });
    });

    it('answers 100,000 keys in one row with 201 and stores only the known fields', async () => {
      const extra = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
      const row = validListing({ title: 'many keys', ...extra });

      const res = await post('listings', { listings: [row] });

      expect(res.statusCode).toBe(201);
      expect(await listingsTitled('many keys')).toHaveLength(1);
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
      expect(res.json()).toEqual({ error: 'Invalid JSON body' });
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
      expect(res.json()).toEqual({ error: 'Invalid JSON body' });
      expect(await counts()).toEqual(before);
    });
  });
});
