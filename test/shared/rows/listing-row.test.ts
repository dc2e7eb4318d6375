import { describe, expect, it } from 'vitest';
import { ListingRowSchema, type ListingRow } from '../../../src/shared/rows/listing-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import { LISTING_DEFAULTS, validListing } from '../../support/fixtures.js';
import { rowError } from '../../support/row-errors.js';

// note: written out from docs/rows.md#listings rather than imported, so a drift in the code's list fails here.
const LISTING_CATEGORIES = [
  'miniatures', 'home_decor', 'cosplay', 'jewelry', 'gadgets', 'art', 'gifts', 'replacement',
  'fashion', 'electronics', 'automotive', 'rc_drones', 'education', 'outdoor', 'other',
];
const CATEGORY_REASON = `category: must be one of: ${LISTING_CATEGORIES.join(', ')}`;
const HTTPS_REASON = 'must be an absolute https:// URL';
const DRAGON = '\u{1F409}'; // one code point, two UTF-16 units

function listingWithout(field: string): Record<string, unknown> {
  const row: Record<string, unknown> = validListing();
  delete row[field];
  return row;
}

function photos(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `https://cdn.example.test/photo-${i}.jpg`);
}

/** The reason of a single failing row; fails the test when the row is valid. */
function reasonFor(row: unknown): string {
  const { rows, errors } = validateRows(ListingRowSchema, [row]);
  expect(rows).toEqual([]);
  expect(errors).toHaveLength(1);
  expect(errors[0]?.index).toBe(0);
  return errors[0]?.reason ?? '';
}

/** The normalised row of a single valid row; fails the test when the row is invalid. */
function accepted(row: unknown): ListingRow {
  const { rows, errors } = validateRows(ListingRowSchema, [row]);
  expect(errors).toEqual([]);
  expect(rows).toHaveLength(1);
  return rows[0] as ListingRow;
}

describe('listing rows (ListingRowSchema through validateRows)', () => {
  describe('invalid rows and their reasons', () => {
    it.each<[string, Record<string, unknown>, string]>([
      // required strings
      ['title missing', listingWithout('title'), 'title: required'],
      ['title null', validListing({ title: null }), 'title: required'],
      ['title empty', validListing({ title: '' }), 'title: required'],
      ['title only whitespace', validListing({ title: ' \t\n ' }), 'title: required'],
      ['title a number', validListing({ title: 42 }), 'title: must be a string'],
      ['title an array', validListing({ title: ['Dragon'] }), 'title: must be a string'],
      ['description missing', listingWithout('description'), 'description: required'],
      ['description empty', validListing({ description: '' }), 'description: required'],
      ['description only whitespace', validListing({ description: '    ' }), 'description: required'],
      ['description a boolean', validListing({ description: true }), 'description: must be a string'],
      ['material missing', listingWithout('material'), 'material: required'],
      ['material empty', validListing({ material: '' }), 'material: required'],
      ['material only whitespace', validListing({ material: '\n\t' }), 'material: required'],
      ['material an object', validListing({ material: { name: 'PLA' } }), 'material: must be a string'],
      // price_cents
      ['price_cents missing', listingWithout('price_cents'), 'price_cents: required'],
      ['price_cents null', validListing({ price_cents: null }), 'price_cents: required'],
      ['price_cents the string "1500"', validListing({ price_cents: '1500' }), 'price_cents: must be a whole number'],
      ['price_cents 12.5', validListing({ price_cents: 12.5 }), 'price_cents: must be a whole number'],
      ['price_cents -1', validListing({ price_cents: -1 }), 'price_cents: must be >= 0'],
      ['price_cents 2147483648', validListing({ price_cents: 2_147_483_648 }), 'price_cents: must be at most 2147483647'],
      ['price_cents a boolean', validListing({ price_cents: true }), 'price_cents: must be a whole number'],
      // currency
      ['currency missing', listingWithout('currency'), 'currency: required'],
      ['currency null', validListing({ currency: null }), 'currency: required'],
      ['currency "usd"', validListing({ currency: 'usd' }), 'currency: must be exactly USD'],
      ['currency "EUR"', validListing({ currency: 'EUR' }), 'currency: must be exactly USD'],
      ['currency " USD" (not trimmed)', validListing({ currency: ' USD' }), 'currency: must be exactly USD'],
      ['currency empty', validListing({ currency: '' }), 'currency: must be exactly USD'],
      ['currency a number', validListing({ currency: 840 }), 'currency: must be exactly USD'],
      // category
      ['category missing', listingWithout('category'), 'category: required'],
      ['category unknown', validListing({ category: 'toys' }), CATEGORY_REASON],
      ['category in another case', validListing({ category: 'Miniatures' }), CATEGORY_REASON],
      ['category with spaces', validListing({ category: ' art ' }), CATEGORY_REASON],
      ['category a number', validListing({ category: 3 }), CATEGORY_REASON],
      // photo_urls
      ['photo_urls missing', listingWithout('photo_urls'), 'photo_urls: required'],
      ['photo_urls null', validListing({ photo_urls: null }), 'photo_urls: required'],
      ['photo_urls empty', validListing({ photo_urls: [] }), 'photo_urls: at least one https:// URL is required'],
      ['photo_urls a string', validListing({ photo_urls: 'https://cdn.example.test/a.jpg' }), 'photo_urls: must be an array of https:// URLs'],
      ['photo_urls an http: URL', validListing({ photo_urls: ['http://cdn.example.test/a.jpg'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls a javascript: URL', validListing({ photo_urls: ['javascript:alert(1)'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls a relative URL', validListing({ photo_urls: ['/images/a.jpg'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls a URL without scheme', validListing({ photo_urls: ['cdn.example.test/a.jpg'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls https: without a host', validListing({ photo_urls: ['https://'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls an ftp: URL', validListing({ photo_urls: ['ftp://cdn.example.test/a.jpg'] }), `photo_urls[0]: ${HTTPS_REASON}`],
      ['photo_urls a number entry', validListing({ photo_urls: ['https://cdn.example.test/a.jpg', 7] }), `photo_urls[1]: ${HTTPS_REASON}`],
      ['photo_urls a null entry', validListing({ photo_urls: ['https://cdn.example.test/a.jpg', null] }), `photo_urls[1]: ${HTTPS_REASON}`],
      ['photo_urls an object entry', validListing({ photo_urls: [{ url: 'https://cdn.example.test/a.jpg' }] }), `photo_urls[0]: ${HTTPS_REASON}`],
      // note: every entry is checked, also those past the 8 that are kept (docs/rows.md#listings)
      ['photo_urls a bad 10th entry', validListing({ photo_urls: [...photos(9), 'http://cdn.example.test/x.jpg'] }), `photo_urls[9]: ${HTTPS_REASON}`],
      // color
      ['color a number', validListing({ color: 5 }), 'color: must be a string'],
      ['color an array', validListing({ color: ['red'] }), 'color: must be a string'],
      // tags
      ['tags a non-string entry', validListing({ tags: ['dragon', 3] }), 'tags[1]: must be a string'],
      ['tags a null entry', validListing({ tags: [null] }), 'tags[0]: must be a string'],
      ['tags a string', validListing({ tags: 'dragon,fantasy' }), 'tags: must be an array of strings'],
      ['a kept tag of 81 characters', validListing({ tags: ['ok', 't'.repeat(81)] }), 'tags[1]: must be at most 80 characters'],
      ['a photo URL of 2,049 characters', validListing({ photo_urls: ['https://cdn.example.test/a.jpg', `https://cdn.example.test/${'p'.repeat(2_024)}`] }), 'photo_urls[1]: must be at most 2048 characters'],
      // print_time_hours
      ['print_time_hours negative', validListing({ print_time_hours: -0.5 }), 'print_time_hours: must be >= 0'],
      ['print_time_hours a string', validListing({ print_time_hours: '3' }), 'print_time_hours: must be a number'],
      // booleans
      ['is_available "true"', validListing({ is_available: 'true' }), 'is_available: must be true or false'],
      ['is_available 1', validListing({ is_available: 1 }), 'is_available: must be true or false'],
      ['allows_custom_orders "false"', validListing({ allows_custom_orders: 'false' }), 'allows_custom_orders: must be true or false'],
      ['allows_custom_orders 0', validListing({ allows_custom_orders: 0 }), 'allows_custom_orders: must be true or false'],
      // NUL characters cannot be stored in Postgres text: a per-row error, never a 500
      ['NUL in title', validListing({ title: 'Dragon\u0000' }), 'title: must not contain NUL characters'],
      ['NUL in description', validListing({ description: 'a\u0000b' }), 'description: must not contain NUL characters'],
      ['NUL in material', validListing({ material: 'P\u0000LA' }), 'material: must not contain NUL characters'],
      ['NUL in color', validListing({ color: 'red\u0000' }), 'color: must not contain NUL characters'],
      ['NUL in a tag', validListing({ tags: ['ok', '\u0000'] }), 'tags[1]: must not contain NUL characters'],
      ['NUL in a photo URL', validListing({ photo_urls: ['https://cdn.example.test/a\u0000.jpg'] }), 'photo_urls[0]: must not contain NUL characters'],
    ])('%s', (_case, row, reason) => {
      expect(reasonFor(row)).toBe(reason);
    });

    it.each<[string, unknown]>([
      ['null', null],
      ['an array', [validListing()]],
      ['an empty array', []],
      ['a number', 42],
      ['a string', 'title,description'],
      ['a boolean', true],
    ])('a row that is %s fails with "row must be an object"', (_case, row) => {
      expect(reasonFor(row)).toBe('row must be an object');
    });

    it('names the failing fields as docs/rows.md#each-row shows: currency, then price_cents', () => {
      expect(reasonFor(validListing({ currency: 'EUR', price_cents: 12.5 }))).toBe(
        'currency: must be exactly USD; price_cents: must be a whole number',
      );
    });

    it('names every failing field of a row exactly once', () => {
      const reason = reasonFor({
        title: '   ',
        description: 'Fine',
        price_cents: -1.5, // fails two checks, named once
        currency: 'usd',
        category: 'toys',
        material: 'PLA',
        photo_urls: ['http://cdn.example.test/a.jpg', 'https://cdn.example.test/b.jpg', 'relative.jpg'],
        tags: ['ok', 1],
        is_available: 'yes',
      });
      const parts = reason.split('; ');
      expect(parts.map((part) => part.split(': ')[0]).sort()).toEqual([
        'category', 'currency', 'is_available', 'photo_urls[0]', 'photo_urls[2]', 'price_cents', 'tags[1]', 'title',
      ]);
      expect(parts.sort()).toEqual([
        CATEGORY_REASON,
        'currency: must be exactly USD',
        'is_available: must be true or false',
        `photo_urls[0]: ${HTTPS_REASON}`,
        `photo_urls[2]: ${HTTPS_REASON}`,
        'price_cents: must be >= 0',
        'tags[1]: must be a string',
        'title: required',
      ].sort());
    });

    it('names every required field of an empty object', () => {
      const parts = reasonFor({}).split('; ').sort();
      expect(parts).toEqual([
        'category: required', 'currency: required', 'description: required', 'material: required',
        'photo_urls: required', 'price_cents: required', 'title: required',
      ]);
    });
  });

  describe('valid rows and how they are stored', () => {
    it.each(LISTING_CATEGORIES)('accepts category %s', (category) => {
      expect(accepted(validListing({ category })).category).toBe(category);
    });

    it.each([0, 1, 2_147_483_647])('accepts price_cents %s unchanged', (price) => {
      expect(accepted(validListing({ price_cents: price })).price_cents).toBe(price);
    });

    it('applies the defaults of docs/rows.md#listings when optional fields are absent', () => {
      expect(accepted(validListing())).toMatchObject(LISTING_DEFAULTS);
    });

    it('keeps booleans that are sent', () => {
      const row = accepted(validListing({ is_available: false, allows_custom_orders: true }));
      expect(row.is_available).toBe(false);
      expect(row.allows_custom_orders).toBe(true);
    });

    it.each([0, 2.5, 140])('accepts print_time_hours %s', (hours) => {
      expect(accepted(validListing({ print_time_hours: hours })).print_time_hours).toBe(hours);
    });

    it('stores the whole normalised row and drops unknown fields', () => {
      const sent = {
        title: '  Articulated dragon  ',
        description: 'Printed in silk PLA.',
        price_cents: 2_500,
        currency: 'USD',
        category: 'miniatures',
        material: 'PLA',
        photo_urls: ['https://cdn.example.test/a.jpg', 'https://cdn.example.test/b.jpg'],
        color: 'red',
        tags: ['dragon', 'fantasy'],
        print_time_hours: 14.5,
        is_available: false,
        allows_custom_orders: true,
      };
      const row = accepted({
        ...sent,
        // unknown or server-owned fields
        account_id: '00000000-0000-4000-8000-000000000000',
        maker_name: 'Someone else',
        maker_photo_url: 'https://evil.example.test/me.png',
        thumbnail_url: 'https://evil.example.test/thumb.png',
        id: 'x',
        sku: 'D-1',
      });
      // as sent, but with the title trimmed and the first photo as the thumbnail
      expect(row).toStrictEqual({ ...sent, title: 'Articulated dragon', thumbnail_url: 'https://cdn.example.test/a.jpg' });
    });

    it('keeps the first 8 of more photo URLs, in order, the first as thumbnail', () => {
      const urls = photos(11);
      const row = accepted(validListing({ photo_urls: urls }));
      expect(row.photo_urls).toEqual(urls.slice(0, 8));
      expect(row.thumbnail_url).toBe(urls[0]);
    });

    it('uses a single photo URL as the thumbnail', () => {
      const row = accepted(validListing({ photo_urls: ['https://cdn.example.test/only.jpg'] }));
      expect(row.photo_urls).toEqual(['https://cdn.example.test/only.jpg']);
      expect(row.thumbnail_url).toBe('https://cdn.example.test/only.jpg');
    });

    it('checks the length of the kept tags only: an 11th tag of 500 characters is dropped, not refused', () => {
      const tags = [...Array.from({ length: 10 }, (_, i) => `${i}`.padEnd(80, 't')), 'x'.repeat(500)];
      expect(accepted(validListing({ tags })).tags).toEqual(tags.slice(0, 10));
    });

    it('keeps the first 10 of 12 tags, in order', () => {
      const tags = Array.from({ length: 12 }, (_, i) => `tag-${i}`);
      expect(accepted(validListing({ tags })).tags).toEqual(tags.slice(0, 10));
    });
  });

  describe('stored lengths (Unicode code points, trimmed first)', () => {
    const LIMITS: [field: 'title' | 'description' | 'material' | 'color', limit: number][] = [
      ['title', 120],
      ['description', 2_000],
      ['material', 80],
      ['color', 40],
    ];

    it.each(LIMITS)('keeps %s of exactly %d characters whole', (field, limit) => {
      const value = 'x'.repeat(limit);
      expect(accepted(validListing({ [field]: value }))[field]).toBe(value);
    });

    it.each(LIMITS)('cuts %s to %d characters', (field, limit) => {
      const value = 'x'.repeat(limit) + 'overflow';
      expect(accepted(validListing({ [field]: value }))[field]).toBe('x'.repeat(limit));
    });

    it.each(LIMITS)('counts %s in code points: %d emoji are kept whole', (field, limit) => {
      const stored = accepted(validListing({ [field]: DRAGON.repeat(limit + 3) }))[field];
      expect(stored).toBe(DRAGON.repeat(limit));
      expect(stored).toHaveLength(limit * 2);
    });

    it.each(LIMITS)('never splits an emoji straddling the %s limit of %d', (field, limit) => {
      // the emoji is code point number `limit`, its second UTF-16 unit lies past `limit` units
      const value = 'a'.repeat(limit - 1) + DRAGON + DRAGON + 'b';
      expect(accepted(validListing({ [field]: value }))[field]).toBe('a'.repeat(limit - 1) + DRAGON);
    });

    it.each(LIMITS)('drops an emoji that starts just past the %s limit of %d', (field, limit) => {
      const value = 'a'.repeat(limit) + DRAGON;
      expect(accepted(validListing({ [field]: value }))[field]).toBe('a'.repeat(limit));
    });

    it.each(LIMITS)('trims %s before cutting it to %d', (field, limit) => {
      // cut first, the leading spaces would cost 4 characters of the content
      const content = 'y'.repeat(limit);
      expect(accepted(validListing({ [field]: `  \t ${content}\n  ` }))[field]).toBe(content);
      expect(accepted(validListing({ [field]: `    ${content}zz` }))[field]).toBe(content);
    });

    it('trims short text', () => {
      const row = accepted(validListing({ title: '  Dragon ', description: '\tBig\n', material: ' PLA ', color: ' red ' }));
      expect(row).toMatchObject({ title: 'Dragon', description: 'Big', material: 'PLA', color: 'red' });
    });
  });

  describe('a batch of rows', () => {
    it('returns the valid rows in request order and the errors sorted by index', () => {
      const input = [
        validListing({ title: 'first' }),
        validListing({ currency: 'EUR' }),
        null,
        validListing({ title: 'second' }),
        validListing({ price_cents: '10' }),
        validListing({ title: 'third' }),
        [],
      ];
      const { rows, errors } = validateRows(ListingRowSchema, input);
      expect(rows.map((row) => row.title)).toEqual(['first', 'second', 'third']);
      expect(errors).toEqual([
        rowError(1, 'currency: must be exactly USD', 'not_allowed'),
        rowError(2, 'row must be an object', 'not_an_object'),
        rowError(4, 'price_cents: must be a whole number', 'wrong_type'),
        rowError(6, 'row must be an object', 'not_an_object'),
      ]);
    });

    it('reports one error per failing row, every row counted once', () => {
      const input = Array.from({ length: 50 }, (_, i) => (i % 3 === 0 ? validListing({ title: '' }) : validListing()));
      const { rows, errors } = validateRows(ListingRowSchema, input);
      expect(rows.length + errors.length).toBe(50);
      expect(errors.map((e) => e.index)).toEqual(input.flatMap((_, i) => (i % 3 === 0 ? [i] : [])));
      expect(new Set(errors.map((e) => e.reason))).toEqual(new Set(['title: required']));
    });
  });
});

// note: text with a lone surrogate fails the row (test/shared/rows/unicode-text.test.ts).
describe('listing rows: text that has no UTF-8 form', () => {
  it('keeps a well-formed surrogate pair (an emoji) as it is', () => {
    const { rows } = validateRows(ListingRowSchema, [validListing({ title: 'dragon \ud83d\udc09' })]);
    expect(rows[0]?.title).toBe('dragon 🐉');
  });
});

describe('listing rows: photo URLs with non-ASCII hosts', () => {
  // note: Node 20's URL.canParse answers false for such hosts once V8 has optimised it (after
  // about a thousand calls); validation must keep accepting them however warm it is.
  it('accepts an internationalised host on every one of many rows', () => {
    // Through JSON, as a request body arrives: flat strings, which are what the fast path mishandles.
    const rows: unknown[] = JSON.parse(
      JSON.stringify(Array.from({ length: 5_000 }, () => validListing({ photo_urls: ['https://¡.example/a.jpg'] }))),
    );
    const { errors } = validateRows(ListingRowSchema, rows);
    expect(errors).toEqual([]);
  });
});

describe('listing rows: photo URLs judged by their authority', () => {
  const verdict = (url: string) => validateRows(ListingRowSchema, [validListing({ photo_urls: [url] })]).errors.length === 0;
  const cases: [string, boolean][] = [
    ['https://cdn.example.test/a.jpg', true],
    ['https://cdn.example.test:99999/a.jpg', false],
    ['https://cdn.example.test:443/a.jpg', true],
    ['https://cdn.example.test:44x/a.jpg', false],
    ['https://[::1/a.jpg', false],
    ['https://[::1]/a.jpg', true],
    ['https://user@/a.jpg', false],
    ['https://user:pw@cdn.example.test/a.jpg', true],
    ['https://1.2.3.256/a.jpg', false],
    ['https://cdn.exa<mple.test/a.jpg', false],
    // A path, query or fragment never makes a URL invalid, whatever it holds.
    ['https://cdn.example.test/%zz/<>^|.jpg', true],
    ['https://cdn.example.test?q=[]{}', true],
    ['https://cdn.example.test#frag ment', false], // whitespace is refused anywhere
  ];

  it.each(cases)('%s -> %s, the first time and every time after', (url, valid) => {
    expect(verdict(url)).toBe(valid);
    expect(verdict(url)).toBe(valid);
    // The same authority with another path: the same verdict.
    const origin = /^https:\/\/[^/?#]*/.exec(url)![0];
    if (!url.includes(' ')) expect(verdict(`${origin}/other/path.png`), origin).toBe(valid);
  });

  it('agrees with the WHATWG parser on the whole URL', () => {
    for (const [url, valid] of cases) {
      if (url.includes(' ')) continue;
      let parses: boolean;
      try {
        parses = new URL(url).hostname !== '';
      } catch {
        parses = false;
      }
      expect(parses, url).toBe(valid);
    }
  });
});
