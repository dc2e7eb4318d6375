import { z } from 'zod';

/**
 * Building blocks of the row schemas. Their messages become the per-row `reason` text
 * (`"title: required; price_cents: must be a whole number"`), so they are written for partners.
 */

const isMissing = (input: unknown) => input === undefined || input === null;

// note: Postgres text cannot hold U+0000; refusing it here keeps it a per-row error, not a 500.
const hasNoNul = (s: string) => !s.includes('\u0000');
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

// note: a lone surrogate (JSON allows "\ud800") has no UTF-8 form; it is stored as U+FFFD,
// decided here so that every later step sees well-formed text.
const wellFormed = (s: string) => (s.isWellFormed() ? s : s.toWellFormed());

const stringRequired = () =>
  z.string({ error: (issue) => (isMissing(issue.input) ? 'required' : 'must be a string') }).overwrite(wellFormed);

/** Required, trimmed, non-blank; optionally truncated to the stored length (decisions A). */
export function requiredText(options: { truncateTo?: number; maxLength?: number } = {}) {
  let schema = stringRequired().trim().min(1, 'required').refine(hasNoNul, NUL_MESSAGE);
  if (options.maxLength !== undefined) {
    const max = options.maxLength;
    schema = schema.refine((s) => fitsCodePoints(s, max), `must be at most ${max} characters`);
  }
  const truncateTo = options.truncateTo;
  return truncateTo === undefined ? schema : schema.transform((s) => truncateCodePoints(s, truncateTo));
}

/** Optional text: absent, null or blank is stored as null. */
export function optionalText(options: { truncateTo?: number } = {}) {
  const truncateTo = options.truncateTo;
  return z
    .string({ error: 'must be a string' })
    .overwrite(wellFormed)
    .trim()
    .refine(hasNoNul, NUL_MESSAGE)
    .nullish()
    .transform((s) => {
      if (s === undefined || s === null || s === '') return null;
      return truncateTo === undefined ? s : truncateCodePoints(s, truncateTo);
    });
}

const arrayEntry = () => z.string({ error: 'must be a string' }).overwrite(wellFormed).trim().refine(hasNoNul, NUL_MESSAGE);

/** Optional array of strings; a non-string entry fails the row; only the first `keep` are stored. */
export function optionalStringArray(options: { keep?: number } = {}) {
  const keep = options.keep;
  return z
    .array(arrayEntry(), { error: 'must be an array of strings' })
    .nullish()
    .transform((values) => {
      const list = values ?? [];
      return keep === undefined ? list : list.slice(0, keep);
    });
}

// note: literally "https://" and an authority, with no whitespace, control characters or
// backslashes anywhere. The WHATWG parser alone forgives "https:cdn.x/a", "https:////cdn.x",
// "https:\\cdn.x" and embedded tabs, which other consumers of the stored URL would not.
// eslint-disable-next-line no-control-regex -- control characters are exactly what it refuses
const HTTPS_URL_SHAPE = /^https:\/\/[^\s\\/?#\x00-\x1f\x7f]+(?:[/?#][^\s\\\x00-\x1f\x7f]*)?$/i;

function isHttpsUrl(value: string): boolean {
  if (!HTTPS_URL_SHAPE.test(value)) return false;
  // note: one parse; the shape test has already turned away what would make it throw often.
  try {
    return new URL(value).hostname !== '';
  } catch {
    return false;
  }
}

const HTTPS_URL_MESSAGE = 'must be an absolute https:// URL';

/** 1 or more absolute https URLs; every entry is checked, only the first `keep` are stored. */
export function httpsUrlList(keep: number) {
  return z
    .array(
      z
        .string({ error: HTTPS_URL_MESSAGE })
        .overwrite(wellFormed)
        .trim()
        .refine(hasNoNul, NUL_MESSAGE)
        .refine(isHttpsUrl, HTTPS_URL_MESSAGE),
      { error: (issue) => (isMissing(issue.input) ? 'required' : 'must be an array of https:// URLs') },
    )
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
    .number({ error: (issue) => (isMissing(issue.input) ? 'required' : 'must be a whole number') })
    .min(0, 'must be >= 0')
    .max(POSTGRES_INT_MAX, `must be at most ${POSTGRES_INT_MAX}`)
    .refine(Number.isInteger, 'must be a whole number');
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
