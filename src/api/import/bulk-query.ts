import { z } from 'zod';
import { API_ERRORS, apiErrors } from '../../shared/errors/api-errors.js';
import { UPDATE_MODES } from '../../shared/import/update-mode.js';

/**
 * The bulk routes' query string (docs/endpoints.md#dry-run): `dry_run`, `update` and `return`, and nothing else.
 */

const DRY_RUN_DESCRIPTION =
  '`true`: a dry run. Everything an import does, the worker\'s transaction, the table constraints and the `external_id` matching included, then rolled back: the answer is 200 with what the import would have given and `dry_run: true`, and nothing is written. Needs the same key, scope and tier, and counts against the rate limits. Not with an `Idempotency-Key`. Any other value than `true` or `false` is a 400. The only query parameter: any other (`dryRun`, `dry-run`) is a 400 `Unknown query parameter: <name>`, never an import.';

const UPDATE_DESCRIPTION =
  '`merge`: each row changes only the fields it carries in the row its `external_id` names (`null` clears an optional field, sets a boolean\'s default); a row must carry `external_id`, and one that names no row is created when it is a whole valid row, else fails naming its missing fields. `replace` (the default): each row is the whole row. Any other value is a 400. See docs/catalogue.md#merge.';

const RETURN_DESCRIPTION =
  '`rows`: the answer adds `rows`, each valid row\'s (or entry\'s) `index`, `id`, `external_id` and `outcome`, in request order; a replay with the Idempotency-Key answers the same. The only value: any other is a 400. Without it the answer is as before. See docs/catalogue.md#rows-and-their-ids.';

/**
 * `return` (docs/catalogue.md#rows-and-their-ids), on the bulk routes and on archives and deletes;
 * a file import does not take it (an unknown parameter there).
 */
export const ReturnParameterSchema = z.enum(['rows'], { error: API_ERRORS.returnMalformed.text }).optional().meta({ description: RETURN_DESCRIPTION });

/** Whether the request asked for each row's id and outcome. */
export function returnsRows(query: { return?: 'rows' | undefined }): boolean {
  return query.return === 'rows';
}

/** `update` (docs/catalogue.md#merge), on the bulk routes and on file imports. */
export const UpdateParameterSchema = z
  .enum(UPDATE_MODES, { error: API_ERRORS.updateMalformed.text })
  .optional()
  .meta({ description: UPDATE_DESCRIPTION });

/**
 * The bulk routes' query, validated by the route (a value other than `true` or `false`, or the
 * parameter twice, is 400 `dry_run must be true or false`; likewise `update`); a parameter it
 * does not name is refused before (refuseUnknownQueryParameters in route-validation.ts).
 */
export const BulkQuerySchema = z.object({
  dry_run: z.enum(['true', 'false'], { error: API_ERRORS.dryRunMalformed.text }).optional().meta({ description: DRY_RUN_DESCRIPTION }),
  update: UpdateParameterSchema,
  return: ReturnParameterSchema,
});
export type BulkQuery = z.output<typeof BulkQuerySchema>;

/** The answer to a bulk query (or an archive's or delete's) the schema refused: the first parameter it names. */
export function bulkQueryRefusal(errors: readonly { instancePath: string }[]) {
  switch (errors[0]?.instancePath) {
    case '/update':
      return apiErrors.updateMalformed();
    case '/return':
      return apiErrors.returnMalformed();
    default:
      return apiErrors.dryRunMalformed();
  }
}

/**
 * Whether a bulk request is a dry run (docs/endpoints.md#dry-run). A dry run with an
 * Idempotency-Key is refused: nothing it does is recorded, so nothing could be replayed.
 */
export function isDryRun(query: BulkQuery, idempotencyKey: string | undefined): boolean {
  if (query.dry_run !== 'true') return false;
  if (idempotencyKey !== undefined) throw apiErrors.dryRunWithIdempotencyKey();
  return true;
}
