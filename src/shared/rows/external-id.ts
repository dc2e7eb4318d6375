import { z } from 'zod';
import { fitsCodePoints, issueCode, NOT_UNICODE_MESSAGE, trimmedTextPattern } from './field-schemas.js';
import type { RowErrorCode } from './row-error-codes.js';
import { CONTROL_CHARACTERS } from './control-characters.js';

export const EXTERNAL_ID_MAX_LENGTH = 100;

/** The id as stored (trimmed), or why it is refused. */
export function normaliseExternalId(value: string): string | { problem: string; code: RowErrorCode } {
  // note: never rewritten to U+FFFD, which would make two different ids one (field-schemas.ts).
  if (!value.isWellFormed()) return { problem: NOT_UNICODE_MESSAGE, code: 'invalid_characters' };
  const text = value.trim();
  if (text === '') return { problem: 'must not be blank', code: 'blank' };
  if (CONTROL_CHARACTERS.test(text)) return { problem: 'must not contain control characters', code: 'invalid_characters' };
  if (!fitsCodePoints(text, EXTERNAL_ID_MAX_LENGTH)) return { problem: `must be at most ${EXTERNAL_ID_MAX_LENGTH} characters`, code: 'too_long' };
  return text;
}

/** The valid external id a request row sends, if it sends one. */
export function externalIdOf(row: unknown): string | undefined {
  if (typeof row !== 'object' || row === null) return undefined;
  const value = (row as Record<string, unknown>)['external_id'];
  if (typeof value !== 'string') return undefined;
  const id = normaliseExternalId(value);
  return typeof id === 'string' ? id : undefined;
}

/**
 * The partner's own id for a row (a SKU, an asset tag; docs/rows.md#external-id): optional; when
 * sent, 1 to 100 printable characters after trimming. Absent or null means the row has none and
 * is always created.
 */
export function externalId() {
  return externalIdString()
    .nullish()
    .transform((id) => id ?? undefined)
    .optional();
}

/** An external id that must be sent: the rule of externalId without its absence (a merge row's, merge-row.ts). */
export function externalIdString() {
  return z
    .string({ error: 'must be a string' })
    .check((ctx) => {
      const id = normaliseExternalId(ctx.value);
      if (typeof id === 'string') ctx.value = id;
      else ctx.issues.push({ code: 'custom', message: id.problem, input: ctx.value, params: issueCode(id.code) });
    })
    // note: the length is counted once trimmed, so the document says it as a pattern
    .meta({
      pattern: trimmedTextPattern(EXTERNAL_ID_MAX_LENGTH),
      description: `Your own id for this row (a SKU, an asset tag): 1 to ${EXTERNAL_ID_MAX_LENGTH} printable characters after trimming, unique per account and kind. A row whose \`external_id\` the account already has updates that row in place; a row without one is always created.`,
      examples: ['SKU-10442'],
    });
}
