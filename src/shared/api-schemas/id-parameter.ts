import { z } from 'zod';

/** The most characters of an id a client sends. note: every id the service issues is a UUID (36). */
export const ID_PARAMETER_MAX_LENGTH = 64;

/**
 * An id a client sends in a path or a query (an import's, a key's, a page's `starting_after`): 1
 * to 64 printable ASCII characters. A route answers an id refused here as it answers an unknown
 * one: 404 in a path, its own 400 in a query (docs/imports.md#import-ids).
 * note: checked before any statement sees the id. PostgreSQL raises on a NUL in text (22021),
 * and would be handed a lone surrogate as U+FFFD; no id the service issues holds anything but
 * printable ASCII (it travels in `Location`), so an id refused here is one no account has.
 */
export const IdParameterSchema = z
  .string()
  .min(1)
  .max(ID_PARAMETER_MAX_LENGTH)
  .regex(/^[!-~]+$/);

/**
 * A key's id as a client sends it: an id parameter in a UUID's shape. note: the column is a uuid,
 * on which PostgreSQL raises for any other text (22P02).
 */
export const KeyIdParameterSchema = IdParameterSchema.regex(z.regexes.guid);
