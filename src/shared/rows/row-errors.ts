import { z } from 'zod';
import { ROW_ERROR_CODE_MEANINGS, ROW_ERROR_CODES } from './row-error-codes.js';
import { OPEN_CODE_NOTE, OPEN_ENUM } from './open-enum.js';

/**
 * The row errors of an import, as the API answers them, the job carries them and the import's
 * record keeps them: one schema each, the types derived from them.
 */

/** One problem of a failing row (docs/rows.md#row-error-codes). */
export const RowErrorDetailSchema = z.object({
  field: z.string().nullable().meta({ description: 'The field as the reason names it (`title`, `photo_urls[2]`), or null for the whole row.' }),
  // note: the service sends only these; the document lists them open (open-enum.ts), as codes may be added.
  code: z.enum(ROW_ERROR_CODES).meta({
    description: `What is wrong; a code never changes meaning. The codes known today:\n\n${ROW_ERROR_CODES.map((code) => `- \`${code}\`: ${ROW_ERROR_CODE_MEANINGS[code]}`).join('\n')}\n\n${OPEN_CODE_NOTE}`,
    [OPEN_ENUM]: true,
  }),
  message: z.string().meta({ description: 'The same problem in words, as the reason says it.' }),
});

/** One row the API refused, by its position in the request. */
export const RowErrorSchema = z.object({
  index: z.number().int().nonnegative(),
  /** the row's own `external_id`, when it sent a valid one (docs/rows.md#external-id) */
  external_id: z.string().optional().meta({ description: 'The row\'s own `external_id`, when it sent a valid one.' }),
  /** an entry of `ids` (bulk-archive, bulk-delete), when it is well formed (docs/catalogue.md#archive-and-delete) */
  id: z.string().optional().meta({ description: 'An archive\'s or delete\'s entry of `ids`, when it is a well-formed id.' }),
  reason: z.string().meta({ description: 'Every problem of the row in words: `field: message`, joined with `; `.' }),
  // note: a job from an older API replica (a rolling deploy) has no details; it is still valid.
  details: z.array(RowErrorDetailSchema).default([]).meta({ description: 'One entry per problem, in the order of the reason.' }),
});

/** One problem of a failing row, for a program to act on. */
export type RowErrorDetail = z.output<typeof RowErrorDetailSchema>;
/** One row refused, by its index: every problem as one text (`reason`) and one by one (`details`). */
export type RowError = z.output<typeof RowErrorSchema>;
