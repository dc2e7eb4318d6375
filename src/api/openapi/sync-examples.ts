import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import { example, IMPORT_ID, ROW_EXAMPLES } from './examples.js';
import type { Examples } from './route-schema.js';

/**
 * The examples of a nightly sync (docs/rows.md#external-id) and of a dry run
 * (docs/endpoints.md#dry-run): rows matched on the partner's `external_id`.
 */

const withIds = (kind: ImportKind) => ({ [kind]: [{ external_id: 'SKU-10442', ...ROW_EXAMPLES[kind].valid }] });

export function bulkSyncBodyExamples(kind: ImportKind): Examples {
  return {
    sync: example(
      'A row with your own id',
      withIds(kind),
      'Sent again tomorrow, the row with `external_id` "SKU-10442" updates the one created today instead of adding a second.',
    ),
  };
}

export function bulkSyncResultExamples(): Examples {
  return {
    nightlySync: example(
      'A nightly sync: rows matched on external_id',
      { inserted: 2, updated: 37, unchanged: 158, skipped: 1, errors: [], import_id: IMPORT_ID },
      'Some rows carried `external_id`: `updated` and `unchanged` are added, and `inserted + updated + unchanged + skipped` is the number of rows sent. (The skipped row\'s entry of `errors` is left out here.)',
    ),
  };
}

/** A 201 with `?return=rows` (docs/catalogue.md#rows-and-their-ids). */
export function bulkRowsResultExamples(): Examples {
  return {
    returnRows: example(
      'With ?return=rows: each row\'s id and outcome',
      {
        inserted: 1,
        updated: 1,
        unchanged: 0,
        skipped: 1,
        errors: [{ index: 1, reason: 'currency: must be exactly USD', details: [{ field: 'currency', code: 'not_allowed', message: 'must be exactly USD' }], external_id: 'SKU-10443' }],
        rows: [
          { index: 0, id: '01937a4e-8f2c-7b3d-9a41-6c5e2f1d0b87', external_id: 'SKU-10442', outcome: 'inserted' },
          { index: 2, id: '01937a4e-8f2c-7b3d-9a41-6c5e2f1d0b88', external_id: 'SKU-10444', outcome: 'updated' },
        ],
        import_id: IMPORT_ID,
      },
      '`rows` names each valid row by its position in the request, with our id for it; the failed row is in `errors` only. A replay with the Idempotency-Key answers the same `rows`.',
    ),
  };
}

export function bulkDryRunExamples(kind: ImportKind): Examples {
  return {
    dryRun: example(
      'Dry run',
      { inserted: 1, updated: 0, unchanged: 0, skipped: 0, errors: [], dry_run: true },
      `The answer to \`POST /v1/api/${kind}/bulk?dry_run=true\` with \`${JSON.stringify(withIds(kind))}\` when the account has no row "SKU-10442" yet: nothing was written.`,
    ),
  };
}

export const DRY_RUN_BAD_REQUEST_EXAMPLES: Examples = {
  dryRunValue: example('dry_run other than true or false', apiErrors.dryRunMalformed().body),
  dryRunWithIdempotencyKey: example('dry_run=true with an Idempotency-Key', apiErrors.dryRunWithIdempotencyKey().body),
  updateValue: example('update other than replace or merge', apiErrors.updateMalformed().body),
  returnValue: example('return other than rows', apiErrors.returnMalformed().body),
  unknownQueryParameter: example('A query parameter other than dry_run', apiErrors.unknownQueryParameter('dryRun').body, 'The answer to `?dryRun=true`: nothing was imported. The name is shown with control characters as `\\uXXXX`, at most 64 characters.'),
};
