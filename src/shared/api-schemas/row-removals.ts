import { z } from 'zod';
import { MAX_REMOVAL_ENTRIES } from '../rows/removal-entries.js';
import { RowErrorSchema } from '../rows/row-errors.js';
import { ImportIdSchema } from './import-id.js';

/**
 * The bodies and answers of `POST /v1/api/{listings,machines}/bulk-archive` and `bulk-delete`
 * (docs/catalogue.md#archive-and-delete). note: the body is checked entry by entry
 * (checkRemovalBody), so that a failing entry is reported, not fatal; this schema documents it.
 */

const entries = (description: string, item: z.ZodString) => z.array(item).min(1).max(MAX_REMOVAL_ENTRIES).meta({ description });

export const RowRemovalBodySchema = z
  .xor([
    z.object({
      external_ids: entries('Your ids of the rows (`external_id`), as an import matches them (trimmed).', z.string().meta({ minLength: 1, maxLength: 100, examples: ['SKU-10442'] })),
    }),
    z.object({
      ids: entries('Our ids of the rows (`id`).', z.string().meta({ format: 'uuid', examples: ['01937a4e-8f2c-7b3d-9a41-6c5e2f1d0b87'] })),
    }),
  ])
  .meta({
    description: `Exactly one of \`external_ids\` and \`ids\`: 1 to ${MAX_REMOVAL_ENTRIES} entries, each naming one row of the account, at most 1,048,576 bytes. An entry that is malformed, names no row of the account, or names the same row as an earlier entry is reported in \`errors\`; the others are done.`,
  });

const count = (description: string) => z.number().int().nonnegative().meta({ description });
const errors = z.array(RowErrorSchema).meta({ description: 'The entries that failed, by index, each with its `external_id` or `id` when well formed.' });
const skipped = count('Entries that failed; each is in `errors`.');
const importId = ImportIdSchema;

const archived = count('Rows archived now.');
const unchanged = count('Rows that were archived already.');
const deleted = count('Rows deleted.');

export const ArchiveResultSchema = z.object({ archived, unchanged, skipped, errors, import_id: importId }).meta({
  id: 'ArchiveResult',
  description: '`archived + unchanged + skipped` is the number of entries sent; `errors` is sorted by `index`. `import_id` names the import (`action: archive`), also in `Location`.',
});

export const ArchiveDryRunResultSchema = z.object({ archived, unchanged, skipped, errors, dry_run: z.literal(true) }).meta({
  id: 'ArchiveDryRunResult',
  description: 'What the archive would have done, with `dry_run: true`; nothing was changed.',
});

export const DeleteResultSchema = z.object({ deleted, skipped, errors, import_id: importId }).meta({
  id: 'DeleteResult',
  description: '`deleted + skipped` is the number of entries sent; `errors` is sorted by `index`. `import_id` names the import (`action: delete`), also in `Location`.',
});

export const DeleteDryRunResultSchema = z.object({ deleted, skipped, errors, dry_run: z.literal(true) }).meta({
  id: 'DeleteDryRunResult',
  description: 'What the delete would have done, with `dry_run: true`; nothing was deleted.',
});
