import { apiErrors } from '../../shared/errors/api-errors.js';
import { ERROR_EXAMPLES, example, IMPORT_ID } from './examples.js';
import type { Examples } from './route-schema.js';

/** The examples of `POST /v1/api/imports` (docs/imports.md#whole-files). */

export const FILE_BODY_EXAMPLES = {
  ndjson:
    '{"external_id": "SKU-1", "title": "Articulated dragon", "description": "Silk PLA, hand finished.", "price_cents": 2500, "currency": "USD", "category": "miniatures", "material": "PLA", "photo_urls": ["https://cdn.example.com/dragon.jpg"]}\n',
  csv: 'external_id,title,description,price_cents,currency,category,material,photo_urls\nSKU-1,Articulated dragon,"Silk PLA, hand finished.",2500,USD,miniatures,PLA,https://cdn.example.com/dragon.jpg|https://cdn.example.com/dragon-2.jpg\n',
};

/** A file import as its 202 reads it: stored, its failed rows known, the workers to write it. */
const QUEUED = {
  id: IMPORT_ID,
  kind: 'listings',
  source: 'file',
  action: 'upsert',
  mode: 'upsert',
  removal: null,
  state: 'queued',
  created_at: '2026-11-25T02:00:00.120Z',
  started_at: null,
  finished_at: null,
  rows: { received: 300_000, processed: 12, inserted: 0, updated: 0, unchanged: 0, archived: 0, deleted: 0, skipped: 12 },
  error_count: 12,
};

export const FILE_IMPORT_ACCEPTED_EXAMPLES: Examples = {
  queued: example('Stored; the workers write it next', { import: QUEUED }),
  mirror: example(
    'A mirror (`mode=mirror`), stored',
    { import: { ...QUEUED, mode: 'mirror', removal: { missing: 'archive', max_removal: 10, state: 'pending', rows: 0 } } },
    'Its removal waits for the file to be written: `pending` until then, `done` or `held` after (docs/catalogue.md#mirror).',
  ),
};

export const FILE_IMPORT_BAD_REQUEST_EXAMPLES: Examples = {
  kind: example('No kind, or another', apiErrors.importKindMalformed().body),
  update: example('update other than replace or merge', apiErrors.updateMalformed().body),
  mode: example('mode other than upsert or mirror', apiErrors.modeMalformed().body),
  maxRemoval: example('max_removal not a whole number from 0 to 100', apiErrors.maxRemovalMalformed().body),
  removalWithoutMirror: example('missing or max_removal without mode=mirror', apiErrors.removalWithoutMirror().body),
  empty: example('An empty file', apiErrors.fileEmpty().body),
  notUtf8: example('Not UTF-8', apiErrors.fileNotUtf8().body),
  unreadable: example('A CSV header naming no field', apiErrors.fileUnreadable('the first line must be a header naming listings fields (title, ...)').body),
  tooManyRows: example('More than 1,000,000 rows', apiErrors.fileTooManyRows(1_000_000).body),
  noValidRows: example(
    'No valid row',
    apiErrors.noValidRows([{ index: 0, reason: 'currency: must be exactly USD', details: [{ field: 'currency', code: 'not_allowed', message: 'must be exactly USD' }] }]).body,
    'The first 100 failed rows are listed; nothing of the file was kept.',
  ),
  idempotencyKey: example('Malformed Idempotency-Key', apiErrors.idempotencyKeyMalformed().body),
  unknownQueryParameter: example('A query parameter other than kind', apiErrors.unknownQueryParameter('dry_run').body),
  badRequest: ERROR_EXAMPLES.badRequest,
};

export const FILE_IMPORT_TOO_MANY_EXAMPLES: Examples = {
  fileImports: example('Two file imports of the account queued or running', apiErrors.tooManyFileImports().body),
  rateDay: example('The day quota cannot take the file', apiErrors.rateLimited('per-day', 38_211).body),
};

export const FILE_MEDIA_TYPE_EXAMPLES: Examples = {
  mediaType: example('Neither NDJSON nor CSV', apiErrors.fileMediaType().body),
};
