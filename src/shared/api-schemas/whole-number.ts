import { z } from 'zod';

/**
 * A whole number as a query parameter writes it: digits only, no sign, no leading zero, no
 * exponent, fraction, space or hexadecimal. note: `Number()` (z.coerce) takes `1e1`, `0x10`,
 * ` 1` and `1.0`; a partner's typo must be a 400, never read as some other number. At most 16
 * digits, so that the number read is the number written.
 */
const PLAIN_WHOLE_NUMBER = /^(0|[1-9]\d{0,15})$/;

/**
 * The number a plain whole number's text names; anything else is passed on as it is, for `number`
 * to refuse (a string is no number).
 */
function readPlainWholeNumber(value: unknown): unknown {
  return typeof value === 'string' && PLAIN_WHOLE_NUMBER.test(value) ? Number(value) : value;
}

/**
 * Every whole-number query parameter: `number` (its range and its error) applied to the text's
 * plain reading (PLAIN_WHOLE_NUMBER). The document shows it as `number` describes it (an integer
 * with its range), which is what a generated client sends.
 */
export function wholeNumberParameter<T extends z.ZodType<unknown, number | undefined>>(number: T) {
  return z.preprocess(readPlainWholeNumber, number);
}
