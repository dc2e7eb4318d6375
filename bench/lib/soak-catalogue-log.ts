import type { ImportEnd } from './soak-client.js';

/**
 * What the soak's catalogue clients did, as each account's log of operations in the order they
 * were sent, with what came back: the ledger that soak-catalogue-model.ts replays. Each catalogue
 * account has one client, so its operations run one after another; the one exception is the
 * writes sent while one of its mirrors' files is being uploaded (`MirrorOp.race`), the race that
 * decisions K.6 rules on.
 *
 * note: times are the wall clock (`Date.now()`), which PostgreSQL's `clock_timestamp()` and
 * `now()` read too (one machine), so that they compare with an import's `upload_began_at`.
 */

/** A listing of the catalogue as the soak sends it: its `external_id` and its price, the one field that changes. */
export interface CatalogueRow {
  id: string;
  price: number;
}

/** When a request was sent and answered, and how it ended. */
export interface Sent {
  /** `Date.now()` before its first attempt */
  sentAt: number;
  /** `Date.now()` once its answer (a success or a refusal) was in; none when it was unserved or interrupted */
  answeredAt?: number;
  end?: ImportEnd;
  /** the answer's body (success or refusal) */
  answer?: Record<string, unknown>;
  /** its attempts carry `X-Request-Id: <prefix>-a<n>` */
  requestIdPrefix: string;
}

/** A write of rows by `external_id`: an upsert (whole rows) or a merge (`{external_id, price_cents}`). */
export interface RowsWrite extends Sent {
  type: 'upsert' | 'merge';
  rows: CatalogueRow[];
}

/** `bulk-archive` or `bulk-delete` by `external_ids`. */
export interface RowsRemoval extends Sent {
  type: 'archive' | 'delete';
  ids: string[];
}

export type CatalogueWrite = RowsWrite | RowsRemoval;

/** The rows a write names, each with the price it sends (0 for an archive or a delete). */
export function entriesOf(write: CatalogueWrite): CatalogueRow[] {
  return 'rows' in write ? write.rows : write.ids.map((id) => ({ id, price: 0 }));
}

/** A line of a mirror's file; an invalid one (a negative price) fails, and still names its row. */
export interface MirrorLine extends CatalogueRow {
  valid: boolean;
}

/** One row of the account as the table holds it. */
export interface TableRow {
  archived: boolean;
  price: number;
  /** rows of the account with this `external_id` (more than 1 is a duplicate) */
  copies: number;
}

/** A mirror (`POST /v1/api/imports?kind=listings&mode=mirror`), its file, and the writes sent while it was uploaded. */
export interface MirrorOp extends Sent {
  type: 'mirror';
  missing: 'archive' | 'delete';
  maxRemoval: number;
  /** what its plan meant it to do: remove the rows left out, or be held by the guard */
  meant: 'done' | 'held';
  lines: MirrorLine[];
  /** the import its 202 named */
  importId?: string;
  /** the account's writes sent while the file was being uploaded, in the order they were sent */
  race: CatalogueWrite[];
  /** `Date.now()` when its client read it completed */
  completedSeenAt?: number;
  /** the account's rows by `external_id` right then, when nothing else of the account was running */
  after?: Map<string, TableRow>;
}

export type CatalogueOp = CatalogueWrite | MirrorOp;

/** What the imports table says of one mirror. Times in ms since the epoch, to the microsecond. */
export interface MirrorFacts {
  importId: string;
  /** the X-Request-Id of the attempt whose upload it was */
  requestId: string;
  state: string;
  /** `upload_began_at`: the moment its file stands for (decisions K.6) */
  beganAt: number;
  /** `created_at`: its acceptance, before which none of it was written */
  acceptedAt: number;
  finishedAt: number | null;
  removal: { state: string; rows: number };
  /** `removal_base`: the guard's base, counted as the upload began */
  base: number | null;
  counts: { inserted: number; updated: number; unchanged: number; skipped: number };
}
