import { z } from 'zod';

/**
 * Each row's id and outcome, which an import answers when asked (`?return=rows`,
 * docs/catalogue.md#rows-and-their-ids): one entry per valid row or entry, in request order. The
 * worker has them from the statements that wrote the rows (RETURNING), and keeps them with the
 * import's record (import_row_outcomes) so that a replay answers the same.
 */

/** What an import did to one row: an upsert's or a merge's three, an archive's two, a delete's one. */
export const ROW_OUTCOMES = ['inserted', 'updated', 'unchanged', 'archived', 'deleted'] as const;
export type RowOutcomeName = (typeof ROW_OUTCOMES)[number];

export const RowOutcomeSchema = z
  .object({
    index: z.number().int().nonnegative().meta({ description: 'The row\'s (or entry\'s) position in the request.' }),
    id: z
      .string()
      .nullable()
      .meta({ description: 'Our id of the row (a UUID); for a delete, the id the row had. Null only in a dry run, for a row that would be inserted.', format: 'uuid' }),
    external_id: z.string().nullable().meta({ description: 'The row\'s `external_id`, null when it has none.' }),
    outcome: z.enum(ROW_OUTCOMES).meta({
      description: '`inserted`, `updated` (a restored archived row included) or `unchanged` for an import; `archived` or `unchanged` (archived already) for an archive; `deleted` for a delete. In a dry run, what would have happened.',
    }),
  })
  .meta({ id: 'RowOutcome', description: 'One valid row or entry of the request: its id and what the import did to it.' });
export type RowOutcome = z.infer<typeof RowOutcomeSchema>;

/** `rows` of an answer: present exactly when the request asked with `?return=rows`. */
export const RowOutcomesSchema = z.array(RowOutcomeSchema).meta({
  description: 'Only with `?return=rows`: one entry per valid row or entry, in request order (failed ones are in `errors` only).',
});
