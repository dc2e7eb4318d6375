import { z } from 'zod';
import type { RowErrorCode } from './row-error-codes.js';

/**
 * Building blocks of the row schemas. Their messages become the per-row `reason` text
 * (`"title: required; price_cents: must be a whole number"`), so they are written for partners;
 * the issues they raise themselves carry the row-error code of `details` (issueCode), and zod's
 * own issues are given one by rowErrorCodeOf (validate-rows.ts).
 */

const isMissing = (input: unknown) => input === undefined || input === null;

// note: Postgres text cannot hold U+0000; refusing it here keeps it a per-row error, not a 500.
const NUL_MESSAGE = 'must not contain NUL characters';

/** Cuts to `max` Unicode code points, never splitting a surrogate pair. */
export function truncateCodePoints(value: string, max: number): string {
  // Fast path: a string of at most `max` UTF-16 units has at most `max` code points.
  if (value.length <= max) return value;
  let units = 0;
  let points = 0;
  while (units < value.length && points < max) {
    const code = value.codePointAt(units) ?? 0;
    units += code > 0xffff ? 2 : 1;
    points += 1;
  }
  return value.slice(0, units);
}

/**
 * The JSON Schema pattern of a text that is 1 to `max` code points once trimmed, whatever
 * whitespace pads it (`\s` is what String.prototype.trim removes). note: for the document, where
 * `maxLength` would count the padding the service trims away and refuse a value it takes.
 */
export function trimmedTextPattern(max: number): string {
  return `^\\s*\\S(?:[\\s\\S]{0,${max - 2}}\\S)?\\s*$`;
}

/** True when `value` has at most `max` code points; O(1) for the usual short string. */
export function fitsCodePoints(value: string, max: number): boolean {
  // A string of at most `max` UTF-16 units has at most `max` code points; one of more than
  // 2 * max units has more than `max`.
  if (value.length <= max) return true;
  if (value.length > 2 * max) return false;
  return codePointLength(value) <= max;
}

export function codePointLength(value: string): number {
  let points = 0;
  for (const _ of value) points += 1;
  return points;
}

/**
 * note: a lone surrogate (JSON allows "\ud800") has no UTF-8 form, so PostgreSQL could only
 * store it as U+FFFD: "SKU\ud800" and "SKU\udfff" would become one value, and one partner's row
 * would overwrite another's. Such text fails the row instead; it is never rewritten
 * (docs/rows.md#each-row).
 */
export const NOT_UNICODE_MESSAGE = 'must be valid Unicode text';

const typeError = (message: string) => (issue: { input: unknown }) => (isMissing(issue.input) ? 'required' : message);

/** The params of an issue a rule raises itself: the row-error code it stands for. */
export const issueCode = (code: RowErrorCode) => ({ rowErrorCode: code });

/** Why a string field fails, as its rule answers instead of the normalised value. */
class FieldIssue {
  readonly params: ReturnType<typeof issueCode>;
  constructor(
    readonly message: string,
    code: RowErrorCode,
  ) {
    this.params = issueCode(code);
  }
}
const REQUIRED = new FieldIssue('required', 'required');
const HAS_NUL = new FieldIssue(NUL_MESSAGE, 'invalid_characters');
const NOT_UNICODE = new FieldIssue(NOT_UNICODE_MESSAGE, 'invalid_characters');

/**
 * A string checked and normalised by one function. note: zod runs every check, refinement and
 * transform as a step of its own; written as chains (overwrite, trim, min, refine, transform),
 * the field rules were the largest CPU cost of an import. Its JSON Schema keywords, which a
 * custom check cannot declare, are given as `jsonSchema`.
 */
function normalisedString(
  error: string | ((issue: { input: unknown }) => string),
  normalise: (value: string) => string | FieldIssue,
  jsonSchema: Record<string, unknown> = {},
) {
  return z
    .string({ error })
    .check((ctx) => {
      const result = normalise(ctx.value);
      if (typeof result === 'string') ctx.value = result;
      else ctx.issues.push({ code: 'custom', message: result.message, input: ctx.value, params: result.params });
    })
    .meta(jsonSchema);
}

/** Trimmed text without NUL; text that is not valid Unicode fails; blank is allowed here. */
function cleanText(value: string): string | FieldIssue {
  if (!value.isWellFormed()) return NOT_UNICODE;
  const text = value.trim();
  return text.includes('\u0000') ? HAS_NUL : text;
}

/** Required, trimmed, non-blank; optionally truncated to the stored length (docs/rows.md#each-row). */
const tooLongIssue = (maxLength: number) => new FieldIssue(`must be at most ${maxLength} characters`, 'too_long');

/**
 * Required, trimmed, non-blank; optionally truncated to the stored length (docs/rows.md#each-row), or
 * refused beyond `maxLength` (docs/rows.md#row-sizes).
 */
export function requiredText(options: { truncateTo?: number; maxLength?: number } = {}) {
  const { truncateTo, maxLength } = options;
  const tooLong = maxLength === undefined ? undefined : tooLongIssue(maxLength);
  return normalisedString(
    typeError('must be a string'),
    (value) => {
      const text = cleanText(value);
      if (typeof text !== 'string') return text;
      if (text === '') return REQUIRED;
      if (tooLong !== undefined && !fitsCodePoints(text, maxLength!)) return tooLong;
      return truncateTo === undefined ? text : truncateCodePoints(text, truncateTo);
    },
    // note: `pattern` as the document's way of saying "not blank": the text is trimmed first.
    { minLength: 1, pattern: '\\S', ...(maxLength === undefined ? {} : { maxLength }) },
  );
}

/** Optional text: absent, null or blank is stored as null; truncated, or refused beyond `maxLength`. */
export function optionalText(options: { truncateTo?: number; maxLength?: number } = {}) {
  const { truncateTo, maxLength } = options;
  const tooLong = maxLength === undefined ? undefined : tooLongIssue(maxLength);
  return normalisedString(
    'must be a string',
    (value) => {
      const text = cleanText(value);
      if (typeof text !== 'string') return text;
      if (tooLong !== undefined && !fitsCodePoints(text, maxLength!)) return tooLong;
      return truncateTo === undefined ? text : truncateCodePoints(text, truncateTo);
    },
    maxLength === undefined ? {} : { maxLength },
  )
    .nullish()
    .transform((s) => (s === undefined || s === null || s === '' ? null : s));
}

/**
 * The cap on the entries an array may send (docs/rows.md#row-sizes). note: it must be the array's
 * first check: zod then refuses an array beyond it before it parses a single entry, so neither
 * the time a row takes nor its error grows with what the row sends (250,000 bad entries would
 * otherwise be 250,000 problems).
 */
const capped = <T extends z.ZodArray>(list: T, maxEntries: number) => list.max(maxEntries, `at most ${maxEntries} entries`);

/**
 * Optional array of at most `maxEntries` strings; a non-string entry fails the row; only the
 * first `keep` are stored. `entryMaxLength` (docs/rows.md#row-sizes) fails the row beyond it; the
 * length is checked on the entries that are kept.
 */
export function optionalStringArray(options: { keep?: number; maxEntries: number; entryMaxLength?: number }) {
  const { keep, maxEntries, entryMaxLength } = options;
  const entry = normalisedString('must be a string', cleanText, entryMaxLength === undefined ? {} : { maxLength: entryMaxLength });
  return capped(z.array(entry, { error: 'must be an array of strings' }), maxEntries)
    .check((ctx) => {
      if (entryMaxLength === undefined) return;
      const checked = keep === undefined ? ctx.value : ctx.value.slice(0, keep);
      checked.forEach((value, index) => {
        if (!fitsCodePoints(value, entryMaxLength)) {
          ctx.issues.push({ code: 'custom', message: `must be at most ${entryMaxLength} characters`, input: value, path: [index], params: issueCode('too_long') });
        }
      });
    })
    .nullish()
    .transform((values) => {
      const kept = values ?? [];
      return keep === undefined ? kept : kept.slice(0, keep);
    });
}

// note: literally "https://" and an authority, with no whitespace, control characters or
// backslashes anywhere. The WHATWG parser alone forgives "https:cdn.x/a", "https:////cdn.x",
// "https:\\cdn.x" and embedded tabs, which other consumers of the stored URL would not.
// eslint-disable-next-line no-control-regex -- control characters are exactly what it refuses
const HTTPS_URL_SHAPE = /^https:\/\/([^\s\\/?#\x00-\x1f\x7f]+)(?:[/?#][^\s\\\x00-\x1f\x7f]*)?$/i;
/** HTTPS_URL_SHAPE for the document: JSON Schema patterns have no flags, and the value is trimmed first. */
const HTTPS_URL_JSON_PATTERN = `^\\s*[Hh][Tt][Tt][Pp][Ss]:\\/\\/${HTTPS_URL_SHAPE.source.slice('^https:\\/\\/'.length, -1)}\\s*$`;

/**
 * Whether an authority (`host`, `user@host:port`) parses, by authority. note: the WHATWG parser
 * can only refuse a URL for its authority (path, query and fragment are always accepted), and
 * the rows of one request mostly share a few hosts: hundreds of URL parses become a few.
 * Cleared when full, so hostile input cannot grow it.
 */
const authorityParses = new Map<string, boolean>();
const AUTHORITY_CACHE_SIZE = 1_000;

function isHttpsUrl(value: string): boolean {
  const authority = HTTPS_URL_SHAPE.exec(value)?.[1];
  if (authority === undefined) return false;
  let parses = authorityParses.get(authority);
  if (parses === undefined) {
    // note: one parse; the shape test has already turned away what would make it throw often.
    try {
      parses = new URL(`https://${authority}/`).hostname !== '';
    } catch {
      parses = false;
    }
    if (authorityParses.size >= AUTHORITY_CACHE_SIZE) authorityParses.clear();
    authorityParses.set(authority, parses);
  }
  return parses;
}

const HTTPS_URL_MESSAGE = 'must be an absolute https:// URL';
const NOT_HTTPS_URL = new FieldIssue(HTTPS_URL_MESSAGE, 'invalid_url');

/** 1 to `maxEntries` absolute https URLs; every entry is checked, only the first `keep` are stored. */
export function httpsUrlList(options: { keep: number; maxEntries: number; maxLength: number }) {
  const { keep, maxEntries, maxLength } = options;
  const tooLong = tooLongIssue(maxLength);
  const list = z
    .array(
      normalisedString(
        HTTPS_URL_MESSAGE,
        (value) => {
          const url = cleanText(value);
          if (typeof url !== 'string') return url;
          if (url.length > maxLength) return tooLong;
          return isHttpsUrl(url) ? url : NOT_HTTPS_URL;
        },
        { maxLength, pattern: HTTPS_URL_JSON_PATTERN },
      ),
      { error: typeError('must be an array of https:// URLs') },
    );
  return capped(list, maxEntries)
    .min(1, 'at least one https:// URL is required')
    .transform((urls) => urls.slice(0, keep));
}

export function optionalBoolean(fallback: boolean) {
  return z
    .boolean({ error: 'must be true or false' })
    .nullish()
    .transform((v) => v ?? fallback);
}

export const POSTGRES_INT_MAX = 2_147_483_647;

/** A JSON number that is a whole number in 0..2^31-1; strings such as "1500" are refused. */
export function wholeNumberInRange() {
  return z
    .number({ error: typeError('must be a whole number') })
    .check((ctx) => {
      const value = ctx.value;
      const [message, code]: [string, RowErrorCode] | [undefined, undefined] =
        value < 0
          ? ['must be >= 0', 'out_of_range']
          : value > POSTGRES_INT_MAX
            ? [`must be at most ${POSTGRES_INT_MAX}`, 'out_of_range']
            : Number.isInteger(value)
              ? [undefined, undefined]
              : ['must be a whole number', 'not_whole_number'];
      if (message !== undefined) ctx.issues.push({ code: 'custom', message, input: value, params: issueCode(code) });
    })
    .meta({ minimum: 0, maximum: POSTGRES_INT_MAX });
}

export function optionalNonNegativeNumber() {
  return z
    .number({ error: 'must be a number' })
    .min(0, 'must be >= 0')
    .nullish()
    .transform((v) => v ?? null);
}

export function requiredLiteral<const T extends string>(value: T) {
  return z.literal(value, {
    error: (issue) => (isMissing(issue.input) ? 'required' : `must be exactly ${value}`),
  });
}

export function requiredEnum<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, {
    error: (issue) => (isMissing(issue.input) ? 'required' : `must be one of: ${values.join(', ')}`),
  });
}
