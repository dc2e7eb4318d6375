import { z } from 'zod';
import { MAX_REMOVAL_ENTRIES } from '../rows/removal-entries.js';
import { RowErrorSchema } from '../rows/row-errors.js';
import { ImportIdSchema } from './import-id.js';
import { RowOutcomesSchema } from '../import/row-outcomes.js';

/**
 * The bodies and answers of `POST /v1/api/{listings,machines}/bulk-archive` and `bulk-delete`
 * (docs/catalogue.md#archive-and-delete). note: the body is refused as a whole only as
 * checkRemovalBody refuses it (not exactly one of the two arrays, no entries, too many); each
 * entry is then checked on its own, and a failing one (not a string, not an id's shape, naming no
 * row) is reported, not fatal. So an entry is any JSON value here, as a bulk body's row is
 * (bulk.ts): a gateway validating requests against the document never refuses a request the
 * service answers 200. A valid entry is described beside it.
 */

/** A body holding the array of entries `name`, and not the other one. */
const entries = (name: 'external_ids' | 'ids', description: string, entry: string, example: string) => {
  const other = name === 'ids' ? 'external_ids' : 'ids';
  return z.object({
    [name]: z
      .array(z.unknown().meta({ description: `${entry} An entry that is not is reported in \`errors\` by its index; the others are done.`, examples: [example] }))
      .min(1)
      .max(MAX_REMOVAL_ENTRIES)
      .meta({ description }),
    // note: the service counts an array as sent when its name is there at all (null included).
    [other]: z.never().optional().meta({ description: `Not sent beside \`${name}\`.` }),
  } as Record<typeof name, z.ZodArray<z.ZodUnknown>> & Record<typeof other, z.ZodOptional<z.ZodNever>>);
};

export const RowRemovalBodySchema = z
  .xor([
    entries(
      'external_ids',
      'Your ids of the rows (`external_id`), as an import matches them (trimmed).',
      'A valid entry is a string of 1 to 100 printable characters once trimmed, an `external_id` of a row of the account.',
      'SKU-10442',
    ),
    entries('ids', 'Our ids of the rows (`id`).', 'A valid entry is the `id` (a UUID) of a row of the account.', '01937a4e-8f2c-7b3d-9a41-6c5e2f1d0b87'),
  ])
  .meta({
    description: `Exactly one of \`external_ids\` and \`ids\`: 1 to ${MAX_REMOVAL_ENTRIES} entries, each naming one row of the account, at most 1,048,576 bytes. An entry that is malformed, names no row of the account, or names the same row as an earlier entry is reported in \`errors\`; the others are done (none done: 400 \`no valid rows\`).`,
  });

const count = (description: string) => z.number().int().nonnegative().meta({ description });
const errors = z.array(RowErrorSchema).meta({ description: 'The entries that failed, by index, each with its `external_id` or `id` when well formed.' });
const skipped = count('Entries that failed; each is in `errors`.');
const importId = ImportIdSchema;

const archived = count('Rows archived now.');
const unchanged = count('Rows that were archived already.');
const deleted = count('Rows deleted.');
const rows = RowOutcomesSchema.optional();

export const ArchiveResultSchema = z.object({ archived, unchanged, skipped, errors, rows, import_id: importId }).meta({
  id: 'ArchiveResult',
  description: '`archived + unchanged + skipped` is the number of entries sent; `errors` is sorted by `index`. `import_id` names the import (`action: archive`), also in `Location`.',
});

export const ArchiveDryRunResultSchema = z.object({ archived, unchanged, skipped, errors, rows, dry_run: z.literal(true) }).meta({
  id: 'ArchiveDryRunResult',
  description: 'What the archive would have done, with `dry_run: true`; nothing was changed.',
});

export const DeleteResultSchema = z.object({ deleted, skipped, errors, rows, import_id: importId }).meta({
  id: 'DeleteResult',
  description: '`deleted + skipped` is the number of entries sent; `errors` is sorted by `index`. `import_id` names the import (`action: delete`), also in `Location`.',
});

export const DeleteDryRunResultSchema = z.object({ deleted, skipped, errors, rows, dry_run: z.literal(true) }).meta({
  id: 'DeleteDryRunResult',
  description: 'What the delete would have done, with `dry_run: true`; nothing was deleted.',
});
