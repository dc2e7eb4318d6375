import fc from 'fast-check';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { codePointLength, POSTGRES_INT_MAX } from '../../src/shared/rows/field-schemas.js';
import { LISTING_CATEGORIES } from '../../src/shared/rows/listing-row.js';
import { ROW_ERROR_CODES, type RowErrorCode } from '../../src/shared/rows/row-error-codes.js';
import { StoredListingSchema, StoredMachineSchema } from './stored-rows.js';
import { validListing, validMachine } from './fixtures.js';

// ---------------------------------------------------------------------------------------------
// Arbitraries: hostile strings, numbers and URLs, valid-looking rows with hostile content, valid
// rows with one to three fields replaced, and anything at all.
// ---------------------------------------------------------------------------------------------

export const LISTING_FIELDS = [
  'external_id', 'title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls', 'color', 'tags',
  'print_time_hours', 'is_available', 'allows_custom_orders',
] as const;
export const MACHINE_FIELDS = [
  'external_id', 'template_id', 'category', 'manufacturer', 'model', 'model_number', 'nickname', 'capabilities', 'is_skill_station',
] as const;
/** Columns the server fills in; a row carrying them must never set them. */
export const SERVER_OWNED_FIELDS = ['id', 'account_id', 'import_job_id', 'maker_name', 'maker_photo_url', 'thumbnail_url', 'verification_status', 'created_at', 'extra'];

export const SPECIAL_STRINGS = [
  '', ' ', '\t\n', '\u00a0', '\u200b', '\ufeff', '\u3000', '\u0000', 'a\u0000b', 'NULL', 'null', 'undefined', 'true', '0', '-1',
  "'; drop table listings; --", "' or '1'='1", '$1', '$$', '\\', '\\x00', '\\u0000', '"', "'", '{a,b}', '{"a":1}', '%s%n',
  '<script>alert(1)</script>', '\u202eevil', '\u05e9\u05dc\u05d5\u05dd', '\u0645\u0631\u062d\u0628\u0627', '\u{1F469}\u200d\u{1F469}\u200d\u{1F467}',
  '\u{1F409}', 'e\u0301', '\ud800', '\udc00', 'x\udbff', '\udbff\udfff', 'https://', 'https://a', 'https://cdn.example.test/x.jpg',
  'http://cdn.example.test/x.jpg', 'javascript:alert(1)', '//cdn.example.test/x.jpg', 'https:///nohost', 'HTTPS://CDN.EXAMPLE.TEST/X.JPG',
  ' https://cdn.example.test/pad.jpg ', 'USD', 'usd', ' USD ', 'miniatures', 'Miniatures', 'other', '__proto__', 'constructor',
];

export const char16 = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
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
export const textArb = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.tuple(hostileString, hostileString).map(([a, b]) => `x${a}${b}`) },
);

export const numberArb = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 0.5, 2_147_483_647, 2_147_483_648, -2_147_483_648, Number.MAX_SAFE_INTEGER, 1e308, 5e-324, 1e21),
  fc.integer(),
  fc.double(),
  fc.nat(),
);

export const urlArb = fc.oneof(
  { weight: 4, arbitrary: fc.webUrl({ validSchemes: ['https'], withQueryParameters: true, withFragments: true }) },
  { weight: 1, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: hostileString },
  { weight: 1, arbitrary: hostileString.map((s) => `https://cdn.example.test/${s}`) },
  { weight: 1, arbitrary: hostileString.map((s) => `https://${s}`) },
);

/** JSON values only: what an HTTP body can carry. */
export const jsonFieldValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  numberArb,
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 13 }),
  fc.array(urlArb, { maxLength: 10 }),
  fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }),
);

/** Anything a JavaScript caller could hand the validator. */
export const anyFieldValue: fc.Arbitrary<unknown> = fc.oneof(jsonFieldValue, fc.anything({ maxDepth: 2, withNullPrototype: true, withBoxedValues: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }));

export function rowArbitraries(kind: ImportKind, value: fc.Arbitrary<unknown>) {
  const plausible =
    kind === 'listings'
      ? fc.record(
          {
            external_id: fc.option(textArb),
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
            external_id: fc.option(textArb),
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
// What a stored or normalised row must satisfy: docs/rows.md and the database's rules (#stored-once).
// ---------------------------------------------------------------------------------------------

/** note: not URL.canParse: on Node 20 its optimised fast path answers false for non-ASCII hosts ("https://¡"). */
export function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
export const isHttpsUrl = (value: string) => {
  const url = parseUrl(value);
  return url !== undefined && url.protocol === 'https:' && url.hostname !== '';
};
/**
 * Stored as sent, so it must read as an absolute https:// URL to any consumer, not only to the
 * forgiving WHATWG parser (which also takes `https:host`, `https:\\host` and strips tabs and newlines).
 */
export const hasControlCharacter = (value: string) => [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
export const isStoredHttpsUrl = (value: string) => /^https:\/\/[^/\\]/i.test(value) && !hasControlCharacter(value) && isHttpsUrl(value);
export const startsTrimmed = (value: string) => value === value.trimStart();

/** An external id as stored: absent, or 1 to 100 characters, trimmed, without control characters (migration 0005). */
function externalIdBreaks(row: Record<string, unknown>): string[] {
  const id = row.external_id;
  if (id === undefined || id === null) return []; // absent from a normalised row, null in the table
  if (typeof id !== 'string' || id.length === 0 || codePointLength(id) > 100 || !startsTrimmed(id) || id !== id.trimEnd() || hasControlCharacter(id)) {
    return ['external_id'];
  }
  return [];
}

export function listingRuleBreaks(row: Record<string, unknown>): string[] {
  const broken: string[] = externalIdBreaks(row);
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

export function machineRuleBreaks(row: Record<string, unknown>): string[] {
  const broken: string[] = externalIdBreaks(row);
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

export const STORED_SCHEMAS = { listings: StoredListingSchema, machines: StoredMachineSchema } as const;
export const RULES = { listings: listingRuleBreaks, machines: machineRuleBreaks } as const;

// ---------------------------------------------------------------------------------------------
// What an entry of `errors` must satisfy (docs/rows.md#row-error-codes), written from the docs
// rather than from the code, so that a property checks every error it meets.
// ---------------------------------------------------------------------------------------------

/** Each published message and the code it stands for. */
const CODE_OF_MESSAGE: readonly [RegExp, RowErrorCode][] = [
  [/^row must be an object$/, 'not_an_object'],
  [/^(required|at least one https:\/\/ URL is required)$/, 'required'],
  [/^must be (a string|true or false|a number|an array of strings|an array of https:\/\/ URLs)$/, 'wrong_type'],
  [/^(must be >= 0|must be at most \d+)$/, 'out_of_range'],
  [/^at most \d+ entries$/, 'too_many_items'],
  [/^must be at most \d+ characters$/, 'too_long'],
  [/^(must not contain (NUL|control) characters|must be valid Unicode text)$/, 'invalid_characters'],
  [/^must not be blank$/, 'blank'],
  [/^appears more than once in this request$/, 'duplicate_external_id'],
];

/**
 * Messages that say what the value should be, given to a value of the field's type (its own
 * code) and to one of another type alike (`wrong_type`): `"1500"` and `12.5` are both "must be a
 * whole number"; NaN and Infinity (no JSON form) are not numbers to the schema either.
 */
const CODE_OF_TYPED_MESSAGE: readonly [RegExp, RowErrorCode, (value: unknown) => boolean][] = [
  [/^must be a whole number$/, 'not_whole_number', Number.isFinite],
  [/^must be an absolute https:\/\/ URL$/, 'invalid_url', (value) => typeof value === 'string'],
  [/^(must be exactly USD|must be one of: .+)$/, 'not_allowed', (value) => typeof value === 'string'],
];

/** The code a problem must carry, from its message and the value sent (undefined: an unknown message). */
export function expectedRowErrorCode(message: string, value: unknown): RowErrorCode | undefined {
  const typed = CODE_OF_TYPED_MESSAGE.find(([pattern]) => pattern.test(message));
  if (typed !== undefined) return typed[2](value) ? typed[1] : 'wrong_type';
  return CODE_OF_MESSAGE.find(([pattern]) => pattern.test(message))?.[1];
}

/** The value a field path (`title`, `photo_urls[2]`) names in a row as sent. */
function valueAt(row: unknown, path: string): unknown {
  const [, name, index] = /^([a-z_]+)(?:\[(\d+)\])?$/.exec(path) ?? [];
  if (name === undefined || typeof row !== 'object' || row === null || !Object.hasOwn(row, name)) return undefined;
  const value = (row as Record<string, unknown>)[name];
  return index === undefined ? value : Array.isArray(value) ? value[Number(index)] : undefined;
}

const FIELD_PATH = /^[a-z_]+(\[\d+\])?$/;

/**
 * How an error entry breaks the contract of `details` (empty when it keeps it): at least one
 * detail; the reason is exactly the details' `field: message` (`message` alone for a null
 * field) joined with `; `; each field a path named once, null only for a row that is not an
 * object; each code from the closed set and the one its message stands for.
 */
export function rowErrorBreaks(error: { reason: string; details?: readonly { field: string | null; code: string; message: string }[] }, row: unknown): string[] {
  const details = error.details ?? [];
  const broken: string[] = [];
  if (details.length === 0) broken.push('no details');
  const reason = details.map((d) => (d.field === null ? d.message : `${d.field}: ${d.message}`)).join('; ');
  if (reason !== error.reason) broken.push(`reason ${JSON.stringify(error.reason)} is not its details' ${JSON.stringify(reason)}`);
  const fields = details.map((d) => d.field);
  if (new Set(fields).size !== fields.length) broken.push(`a field named twice: ${JSON.stringify(fields)}`);
  for (const { field, code, message } of details) {
    if (field !== null && !FIELD_PATH.test(field)) broken.push(`field ${JSON.stringify(field)} is not a path`);
    if ((field === null) !== (code === 'not_an_object')) broken.push(`field ${JSON.stringify(field)} with code ${code}`);
    if (!(ROW_ERROR_CODES as readonly string[]).includes(code)) broken.push(`code ${code} is not in the closed set`);
    const expected = expectedRowErrorCode(message, field === null ? row : valueAt(row, field));
    if (code !== expected) broken.push(`${field}: ${message} has code ${code}, expected ${expected ?? 'a known message'}`);
  }
  return broken;
}
