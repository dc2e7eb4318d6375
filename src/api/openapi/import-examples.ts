import { apiErrors } from '../../shared/errors/api-errors.js';
import { ERROR_EXAMPLES, example, IMPORT_ID } from './examples.js';
import type { Examples } from './route-schema.js';

/** The examples of the import resource (docs/imports.md). */

/** An import's counts (docs/imports.md): those not given are 0. */
type Rows = { received: number; processed: number } & Partial<Record<'inserted' | 'updated' | 'unchanged' | 'archived' | 'deleted' | 'skipped', number>>;

/**
 * An import as `GET /v1/api/imports/{id}` reads it, its fields in the document's order: an upsert
 * (no mirror, no removal) unless told otherwise. `times` are its created, started and finished times.
 */
function anImport(fields: {
  id: string;
  kind: 'listings' | 'machines';
  source: 'request' | 'file';
  action?: 'upsert' | 'archive';
  mirror?: { missing: 'archive'; max_removal: number; state: 'done' | 'held'; rows: number };
  state: 'completed' | 'running' | 'cancelled';
  times: [string, string | null, string | null];
  rows: Rows;
  errorCount: number;
}) {
  const [created, started, finished] = fields.times;
  const { received, processed, ...counts } = fields.rows;
  return {
    id: fields.id,
    kind: fields.kind,
    source: fields.source,
    action: fields.action ?? 'upsert',
    mode: fields.mirror === undefined ? 'upsert' : 'mirror',
    removal: fields.mirror ?? null,
    state: fields.state,
    created_at: created,
    started_at: started,
    finished_at: finished,
    rows: { received, processed, inserted: 0, updated: 0, unchanged: 0, archived: 0, deleted: 0, skipped: 0, ...counts },
    error_count: fields.errorCount,
  };
}

const COMPLETED = anImport({
  id: IMPORT_ID, kind: 'listings', source: 'request', state: 'completed',
  times: ['2026-11-24T02:00:00.120Z', '2026-11-24T02:00:00.134Z', '2026-11-24T02:00:00.161Z'],
  rows: { received: 200, processed: 200, inserted: 2, updated: 37, unchanged: 158, skipped: 3 }, errorCount: 3,
});

const RUNNING = anImport({
  id: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f', kind: 'machines', source: 'request', state: 'running',
  times: ['2026-11-24T02:05:10.002Z', null, null],
  rows: { received: 500, processed: 1, skipped: 1 }, errorCount: 1,
});

/** A file import being written: its counts are what its chunks wrote so far. */
const FILE_RUNNING = anImport({
  id: '2e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b', kind: 'listings', source: 'file', state: 'running',
  times: ['2026-11-24T03:00:00.410Z', '2026-11-24T03:00:01.020Z', null],
  rows: { received: 250_000, processed: 120_042, inserted: 100_000, updated: 15_000, unchanged: 5_000, skipped: 42 }, errorCount: 42,
});

/** The same file import cancelled two chunks later: what its chunks wrote stays. */
const FILE_CANCELLED = {
  ...FILE_RUNNING,
  state: 'cancelled',
  finished_at: '2026-11-24T03:00:09.385Z',
  rows: { ...FILE_RUNNING.rows, processed: 122_042, inserted: 101_800, updated: 15_150, unchanged: 5_050 },
};

/** An archive (docs/catalogue.md#archive-and-delete): its entries are its rows. */
const ARCHIVED = anImport({
  id: '3f4a5b6c-7d8e-4f9a-8b1c-2d3e4f5a6b7c', kind: 'listings', source: 'request', action: 'archive', state: 'completed',
  times: ['2026-11-24T02:10:00.050Z', '2026-11-24T02:10:00.061Z', '2026-11-24T02:10:00.074Z'],
  rows: { received: 40, processed: 40, unchanged: 2, archived: 37, skipped: 1 }, errorCount: 1,
});

/** A nightly mirror, written; its removal archived the rows the file left out (docs/catalogue.md#mirror). */
const MIRROR_DONE = anImport({
  id: '4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d', kind: 'listings', source: 'file', state: 'completed',
  mirror: { missing: 'archive', max_removal: 10, state: 'done', rows: 41 },
  times: ['2026-11-25T02:00:00.120Z', '2026-11-25T02:00:09.310Z', '2026-11-25T02:01:02.877Z'],
  rows: { received: 5_012, processed: 5_012, inserted: 12, updated: 310, unchanged: 4_688, archived: 41, skipped: 2 }, errorCount: 2,
});

/** A mirror whose file was cut short: the guard held its removal. */
const MIRROR_HELD = {
  ...MIRROR_DONE,
  id: '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e',
  removal: { missing: 'archive', max_removal: 10, state: 'held', rows: 3_512 },
  rows: { received: 1_500, processed: 1_500, inserted: 0, updated: 21, unchanged: 1_479, archived: 0, deleted: 0, skipped: 0 },
  error_count: 0,
};

export const IMPORT_EXAMPLES: Examples = {
  completed: example('A nightly sync, completed', COMPLETED),
  running: example('Answered 504, still running', RUNNING, 'Read it again until `state` is `completed` or `failed`: the counts are then those its 201 would have had.'),
  fileRunning: example('A file being written', FILE_RUNNING, 'Its counts grow as its chunks are written; `processed` reaches `received` when it completes.'),
  mirrorDone: example('A mirror, its removal done', MIRROR_DONE, 'The file is the whole catalogue: the 41 active listings whose `external_id` no line carried were archived once it was written.'),
  mirrorHeld: example(
    'A mirror, its removal held',
    MIRROR_HELD,
    'The file held 1,500 of some 5,000 listings: removing the 3,512 it left out would pass `max_removal` (10 % of the active rows with an `external_id`), so nothing was removed; the import still completed.',
  ),
  archived: example('An archive', ARCHIVED, '`POST /v1/api/listings/bulk-archive` with 40 entries: 37 rows archived, 2 archived already, 1 entry that named no row (in the error list).'),
};

export const IMPORT_LIST_EXAMPLES: Examples = {
  page: example('The newest imports', { data: [FILE_RUNNING, RUNNING, COMPLETED], has_more: true }, 'Ask for the next page with `starting_after` the last id.'),
};

export const IMPORT_CANCEL_EXAMPLES: Examples = {
  cancelled: example('A file import, cancelled', FILE_CANCELLED, 'No chunk starts after the answer; the rows its chunks wrote stay, counted.'),
  ended: example('An import that had ended, unchanged', COMPLETED, 'A completed, failed or cancelled import, and a bulk request\'s import, are answered as they are.'),
};

export const IMPORT_CANCEL_BAD_REQUEST_EXAMPLES: Examples = {
  unknownQueryParameter: example('A query parameter', apiErrors.unknownQueryParameter('force').body),
  invalidJson: example('A body that is not JSON', apiErrors.invalidJson().body, 'The route ignores its body; one sent as `application/json` is still read, and must be JSON.'),
  badRequest: ERROR_EXAMPLES.badRequest,
};

export const IMPORT_GET_BAD_REQUEST_EXAMPLES: Examples = {
  unknownQueryParameter: example('A query parameter', apiErrors.unknownQueryParameter('expand').body),
};

export const IMPORT_CANCEL_UNAVAILABLE_EXAMPLES: Examples = {
  storeUnavailable: example('Nothing was cancelled; retry', apiErrors.serviceUnavailable().body),
};

const ROW_ERROR = {
  index: 17,
  external_id: 'SKU-1042',
  reason: 'currency: must be exactly USD',
  details: [{ field: 'currency', code: 'not_allowed', message: 'must be exactly USD' }],
};

export const IMPORT_ERROR_LIST_EXAMPLES: Examples = {
  page: example('Failed rows in index order', { data: [ROW_ERROR], has_more: false }),
};

export const IMPORT_ERRORS_CSV_EXAMPLE = 'index,external_id,field,code,message\n17,SKU-1042,currency,not_allowed,must be exactly USD\n';

export const IMPORT_NOT_FOUND_EXAMPLES: Examples = {
  importNotFound: example('Not one of the account\'s imports', apiErrors.importNotFound().body),
};

export const IMPORT_LIST_BAD_REQUEST_EXAMPLES: Examples = {
  limit: example('limit out of range', apiErrors.pageLimitMalformed(100).body),
  startingAfter: example('starting_after names no import of the account', apiErrors.startingAfterUnknown().body),
  unknownQueryParameter: example('Another query parameter', apiErrors.unknownQueryParameter('state').body),
};

export const IMPORT_ERRORS_BAD_REQUEST_EXAMPLES: Examples = {
  limit: example('limit out of range', apiErrors.pageLimitMalformed(1_000).body),
  startingAfter: example('starting_after not a row index', apiErrors.startingAfterMalformed().body),
  unknownQueryParameter: example('Another query parameter', apiErrors.unknownQueryParameter('field').body),
};
