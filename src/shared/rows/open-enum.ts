/**
 * Marks, in a schema's metadata, a string whose listed values are the known ones, not the only
 * ones: the error codes and the row-error codes (docs/errors.md#codes). The document shows such a
 * schema as `anyOf` its known values and any string (src/api/openapi/transforms.ts), so that tools
 * still show the values while a client that validates answers, or switches on them, is not broken
 * by a code added later.
 * note: a marker rather than a zod union, so that the service's own types stay the closed sets it
 * sends (RowErrorCode); only what the document promises clients is open.
 */
export const OPEN_ENUM = 'x-open-enum';

/** The words every open code's description ends with. */
export const OPEN_CODE_NOTE =
  'New codes may be added: a client must handle a code it does not know as its HTTP status says, never fail on it.';
