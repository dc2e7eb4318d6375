import { z } from 'zod';
import { IMPORT_KINDS, type ImportKind } from '../import/import-kinds.js';
import { ImportResultSchema } from '../import/import-job.js';
import { ImportIdSchema } from './import-id.js';

/**
 * The bulk request bodies (docs/endpoints.md#bulk-imports) built from the row schemas the API validates with.
 * note: the envelope and every row are checked by checkImportBody, row by row, so that a
 * failing row is skipped and reported instead of failing the request; these schemas document
 * what a valid row is.
 */
function bulkBodySchema<K extends ImportKind>(kind: K, rowId: string) {
  const { rowSchema, maxRows, bodyLimitBytes } = IMPORT_KINDS[kind];
  const rows = z.array(rowSchema.meta({ id: rowId })).min(1).max(maxRows);
  return z.object({ [kind]: rows } as Record<K, typeof rows>).meta({
    description: `1 to ${maxRows} ${kind}, at most ${bodyLimitBytes.toLocaleString('en-US')} bytes. A row that fails validation is skipped and reported in \`errors\`; the others are still created.`,
  });
}

export const MachinesBulkBodySchema = bulkBodySchema('machines', 'Machine');
export const ListingsBulkBodySchema = bulkBodySchema('listings', 'Listing');

export const BULK_BODY_SCHEMAS = { machines: MachinesBulkBodySchema, listings: ListingsBulkBodySchema } as const;

export const BulkResponseSchema = ImportResultSchema.extend({ import_id: ImportIdSchema }).meta({
  id: 'BulkResult',
  description:
    '`inserted + skipped` is the number of rows sent; `errors` is sorted by `index`. When some row of the request carries `external_id`, `updated` and `unchanged` are added and `inserted + updated + unchanged + skipped` is the number of rows sent. `import_id` names the import, also in `Location`: an Idempotency-Key replay answers the same one.',
});

export const BulkDryRunResponseSchema = ImportResultSchema.extend({ dry_run: z.literal(true) }).meta({
  id: 'BulkDryRunResult',
  description: 'What the import would have given, with `dry_run: true`; nothing was written.',
});
