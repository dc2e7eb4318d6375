/**
 * The codes of a row error's `details` (docs/rows.md#row-error-codes), each with what it means,
 * in Markdown: the OpenAPI description and the table of docs/rows.md say it in these words.
 * note: the set the service sends, published in the OpenAPI document as an open list (open-enum.ts):
 * a code is never renamed, removed or given another meaning; a new kind of problem gets a new
 * code, which clients must be ready for.
 */
export const ROW_ERROR_CODE_MEANINGS = {
  not_an_object: 'the row is not a JSON object',
  required: 'a required field is missing, null or blank (for `photo_urls`: no URL at all)',
  wrong_type: 'the value has a JSON type the field does not take (a price sent as the string `"1500"`, `"true"` for a boolean, a number where text goes)',
  not_allowed: 'a value outside the field\'s allowed values (a currency other than USD, an unknown listing category)',
  out_of_range: 'a number below or above its bounds (`must be >= 0`, `must be at most 2147483647`)',
  not_whole_number: 'a JSON number that is not whole where a whole number is needed (`12.5` cents)',
  invalid_url: 'not an absolute `https://` URL with a host',
  too_many_items: 'more entries than the field allows (`capabilities: at most 100 entries`)',
  too_long: 'text longer than the field allows (where it is refused, not cut)',
  invalid_characters: 'text with characters the field may not hold (NUL or a lone surrogate, which is not valid Unicode, anywhere; control or bidirectional characters in `external_id`)',
  blank: 'an optional text that, when sent, must not be empty or only whitespace (`external_id`)',
  duplicate_external_id: 'an `external_id` an earlier row of the same request already has',
  invalid_id: 'not an id of ours in its shape (a UUID): an entry of `ids` (bulk-archive, bulk-delete)',
  not_found: 'the entry names no row of the account (bulk-archive, bulk-delete; another account\'s row included)',
  duplicate: 'the entry names the same row as an earlier entry of the request (bulk-archive, bulk-delete)',
} as const;

export type RowErrorCode = keyof typeof ROW_ERROR_CODE_MEANINGS;

export const ROW_ERROR_CODES = Object.keys(ROW_ERROR_CODE_MEANINGS) as [RowErrorCode, ...RowErrorCode[]];
