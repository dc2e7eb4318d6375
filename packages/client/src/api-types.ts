import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/** A row as an import takes it, by kind (the document's typed row schemas). */
export interface RowInputs {
  listings: Schemas['ListingInput'];
  machines: Schemas['MachineInput'];
}
/**
 * A row of an import with `update=merge`, by kind: `external_id` and the fields to change, each
 * by its own rule; `null` clears an optional field (the document's merge row schemas).
 */
export interface MergeRowInputs {
  listings: Schemas['ListingMergeInput'];
  machines: Schemas['MachineMergeInput'];
}
/** A row as the catalogue stores it and lists it back, by kind. */
export interface StoredRows {
  listings: Schemas['StoredListing'];
  machines: Schemas['StoredMachine'];
}

/** One valid row's (or entry's) id and outcome, in an answer asked with `returnRows` (`?return=rows`). */
export type RowOutcome = Schemas['RowOutcome'];
/**
 * An answer as a call asked for it: with `rows` when `Asked` is `true` (`returnRows: true`), without
 * it otherwise, so that a program reads `rows` only where the server sends them.
 */
export type RowsAnswer<Answer, Asked extends boolean | undefined> = Omit<Answer, 'rows'> & (Asked extends true ? { rows: RowOutcome[] } : unknown);
/** `true` exactly when the options ask for rows (`returnRows: true`). */
export type AsksForRows<Options> = Options extends { returnRows: true } ? true : false;

/** The 201 of an import of rows: counts, the import's id and its failed rows. */
export type BulkResult = Schemas['BulkResult'];
/** The 200 of a dry run: what the import would have done; nothing was written. */
export type BulkDryRunResult = Schemas['BulkDryRunResult'];
/** An import as GET /v1/api/imports/{id} describes it. */
export type Import = Schemas['Import'];
/** One failed row of an import (GET /v1/api/imports/{id}/errors). */
export type ImportErrorRow = Schemas['ImportErrorList']['data'][number];
/** The account and key in use (GET /v1/api/me). */
export type Account = Schemas['Account'];

/**
 * What an archive or delete names: your `external_ids`, or our `ids` (1 to 1,000). note: written
 * here rather than taken from the request body's schema, which a validating gateway must let
 * through whole (the entries are checked one by one); the package's tests hold what it sends to
 * the document's request validation.
 */
export type RemovalRequest = { external_ids: string[] } | { ids: string[] };
/** The 200 of an archive or delete (or of its dry run). */
export type ArchiveResult = Schemas['ArchiveResult'] | Schemas['ArchiveDryRunResult'];
export type DeleteResult = Schemas['DeleteResult'] | Schemas['DeleteDryRunResult'];
