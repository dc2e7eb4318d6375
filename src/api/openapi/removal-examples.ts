import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { byIndex, checkRemovalBody, entryError, MAX_REMOVAL_ENTRIES, notFoundDetail } from '../../shared/rows/removal-entries.js';
import { ERROR_EXAMPLES, example, IMPORT_ID } from './examples.js';
import type { Examples } from './route-schema.js';

/**
 * The examples of `bulk-archive` and `bulk-delete` (docs/catalogue.md#archive-and-delete), built
 * with the entry checks the route runs, so that they say what it answers.
 */

const ROW_ID = '01937a4e-8f2c-7b3d-9a41-6c5e2f1d0b87';
const MIXED = { external_ids: ['SKU-10442', 'SKU-10443', 'SKU-10442', ' '] };

/** The errors of MIXED when the account has SKU-10442 but no SKU-10443. */
function mixedErrors(kind: ImportKind) {
  const checked = checkRemovalBody(MIXED);
  if ('refused' in checked) throw new Error('example: expected entries');
  return byIndex(checked.errors, [entryError('external_id', 1, [notFoundDetail('external_id', kind)], 'SKU-10443')]);
}

export function removalBodyExamples(): Examples {
  return {
    externalIds: example('By your ids', { external_ids: ['SKU-10442', 'SKU-10443'] }),
    ids: example('By our ids', { ids: [ROW_ID] }),
  };
}

export function removalResultExamples(kind: ImportKind, action: RowRemovalAction): Examples {
  const errors = mixedErrors(kind);
  const counts = action === 'archive' ? { archived: 1, unchanged: 0 } : { deleted: 1 };
  return {
    withErrors: example(
      'Entries that failed',
      { ...counts, skipped: errors.length, errors, import_id: IMPORT_ID },
      `The answer to \`${JSON.stringify(MIXED)}\` when the account has a ${kind === 'machines' ? 'machine' : 'listing'} "SKU-10442" and none "SKU-10443": the first entry is done; the second names no row, the third the same row as the first, the fourth is blank.`,
    ),
    ...(action === 'archive'
      ? { again: example('Archived already', { archived: 0, unchanged: 2, skipped: 0, errors: [], import_id: IMPORT_ID }, 'Rows archived before count as `unchanged`.') }
      : { allDeleted: example('Every row deleted', { deleted: 2, skipped: 0, errors: [], import_id: IMPORT_ID }) }),
  };
}

export function removalDryRunExamples(action: RowRemovalAction): Examples {
  const counts = action === 'archive' ? { archived: 2, unchanged: 0 } : { deleted: 2 };
  return { dryRun: example('Dry run', { ...counts, skipped: 0, errors: [], dry_run: true }, 'What it would have done; nothing was changed.') };
}

export function removalBadRequestExamples(kind: ImportKind): Examples {
  const noneFound = [entryError('external_id', 0, [notFoundDetail('external_id', kind)], 'SKU-10443')];
  return {
    noValidRows: example('No entry names a row of the account', apiErrors.noValidRows(noneFound).body),
    tooManyRows: example('Too many entries', apiErrors.tooManyRows(kind, MAX_REMOVAL_ENTRIES, MAX_REMOVAL_ENTRIES + 1).body),
    noRows: example('Empty array', apiErrors.noRows(kind, MAX_REMOVAL_ENTRIES).body),
    wrongShape: example('Neither or both of external_ids and ids', apiErrors.entriesEnvelope().body),
    invalidJson: example('Not JSON, or not UTF-8', apiErrors.invalidJson().body),
    idempotencyKey: example('Malformed Idempotency-Key', apiErrors.idempotencyKeyMalformed().body),
    badRequest: ERROR_EXAMPLES.badRequest,
  };
}
