import { z } from 'zod';
import { fitsCodePoints } from './field-schemas.js';
import { CONTROL_CHARACTERS } from './control-characters.js';

export const EXTERNAL_ID_MAX_LENGTH = 100;

/**
 * The partner's own id for a row (a SKU, an asset tag; docs/rows.md#external-id): optional; when
 * sent, 1 to 100 printable characters after trimming. Absent or null means the row has none and
 * is always created.
 */
export function externalId() {
  return z
    .string({ error: 'must be a string' })
    .check((ctx) => {
      const text = (ctx.value.isWellFormed() ? ctx.value : ctx.value.toWellFormed()).trim();
      let message: string | undefined;
      if (text === '') message = 'must not be blank';
      else if (CONTROL_CHARACTERS.test(text)) message = 'must not contain control characters';
      else if (!fitsCodePoints(text, EXTERNAL_ID_MAX_LENGTH)) message = `must be at most ${EXTERNAL_ID_MAX_LENGTH} characters`;
      if (message === undefined) ctx.value = text;
      else ctx.issues.push({ code: 'custom', message, input: ctx.value });
    })
    .meta({
      minLength: 1,
      maxLength: EXTERNAL_ID_MAX_LENGTH,
      pattern: '\\S',
      description: `Your own id for this row (a SKU, an asset tag): 1 to ${EXTERNAL_ID_MAX_LENGTH} printable characters after trimming, unique per account and kind. A row whose \`external_id\` the account already has updates that row in place; a row without one is always created.`,
      examples: ['SKU-10442'],
    })
    .nullish()
    .transform((id) => id ?? undefined)
    .optional();
}
