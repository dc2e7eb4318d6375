import postgres from 'postgres';
import type { Sql, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { ImportJobData } from '../import/import-job.js';
import type { AnyImportResult, ImportAction } from '../import/row-removal-job.js';
import { findRowOutcomes } from './row-outcomes.js';

/**
 * What the `imports` table says of a job: `completed` with the result it wrote; `failed`:
 * recorded before an answer said it wrote nothing, so it never will (recordImportNotWritten); or
 * `running`, an import not ended (a file import's, never a bulk request's: its record is written
 * when it ended).
 */
export type ImportRecord = { state: 'completed'; result: AnyImportResult } | { state: 'failed' } | { state: 'running' };

const PG_FOREIGN_KEY_VIOLATION = '23503';

/** A request's import as the API knows it, to record it before or without its worker. */
export interface ImportOfRequest {
  importId: string;
  accountId: string;
  kind: ImportKind;
  requestId: string;
  /** rows sent, valid or not */
  total: number;
  errors: ImportJobData['errors'];
  /** when the API accepted it, ms since the epoch */
  createdAt?: number;
  /** what it does; `upsert` when left out (docs/catalogue.md#archive-and-delete) */
  action?: ImportAction;
}

/** The import's `created_at`: when the API accepted it, else now. */
export function createdAtOf(input: { createdAt?: number }): Date {
  return input.createdAt === undefined ? new Date() : new Date(input.createdAt);
}

/**
 * How long the fence waits for a worker's transaction that holds the job's record. note: the
 * worker inserts the record in the statement that writes its rows, once they are in
 * (recordImportWithRows), so a wait means a transaction is writing that job right now (or is
 * frozen before its commit): its outcome is not known, and the caller says so rather than hold a
 * request for as long as the transaction may last. A fence that comes first, while the worker's
 * statement is still writing the rows, makes that statement fail on the record, rows and all.
 */
const FENCE_LOCK_TIMEOUT_MS = 2_000;

/** What a read of a record adds: `withRows`, the rows' outcomes kept with it (`?return=rows`), when it has them. */
export interface RecordReading {
  withRows?: boolean;
}

/**
 * The record's result as its import answered it: an archive's and a delete's in their own shape
 * (row-removal-job.ts); with `withRows`, the `rows` kept with it (row-outcomes.ts), when there are.
 */
export async function findImportRecord(sql: Sql | TransactionSql, importId: string, reading: RecordReading = {}): Promise<ImportRecord | undefined> {
  const record = await findRecordedCounts(sql, importId);
  if (record?.state !== 'completed' || reading.withRows !== true) return record;
  const rows = await findRowOutcomes(sql, importId);
  return rows === undefined ? record : { state: 'completed', result: { ...record.result, rows } };
}

async function findRecordedCounts(sql: Sql | TransactionSql, importId: string): Promise<ImportRecord | undefined> {
  type Recorded = AnyImportResult & { state: string; action: ImportAction; updated: number | null; unchanged: number | null; archived: number | null; deleted: number | null };
  const [recorded] = await sql<Recorded[]>`
    select state, action, inserted, updated, unchanged, archived, deleted, skipped, errors from imports where job_id = ${importId}`;
  if (!recorded) return undefined;
  if (recorded.state === 'failed') return { state: 'failed' };
  if (recorded.state !== 'completed') return { state: 'running' };
  const { inserted, updated, unchanged, skipped, errors } = recorded;
  if (recorded.action === 'archive') return { state: 'completed', result: { inserted, archived: recorded.archived ?? 0, unchanged: unchanged ?? 0, skipped, errors } };
  if (recorded.action === 'delete') return { state: 'completed', result: { inserted, deleted: recorded.deleted ?? 0, skipped, errors } };
  return {
    state: 'completed',
    result: updated === null || unchanged === null ? { inserted, skipped, errors } : { inserted, updated, unchanged, skipped, errors },
  };
}

/**
 * The proof behind every answer that says "nothing was written": records the job's import as
 * `failed` unless it is recorded already, in one statement. Afterwards the job can never write
 * (the worker's writeImport finds the record and writes nothing), whatever the queue does with
 * it later: a frozen worker that wakes up, a job a Redis failover brought back, a retry that
 * rejoins it. Returns the record as it stands: `failed`, or `completed` with the result when the
 * job had committed after all (a failure after its commit, a lost acknowledgement). Throws when
 * the record cannot be read or written within FENCE_LOCK_TIMEOUT_MS: then nothing is proven.
 *
 * note: a worker's transaction that has inserted the record but not committed holds its key; the
 * insert waits for it, then finds it written (commit) or takes its place (rollback).
 */
export async function recordImportNotWritten(
  sql: Sql,
  input: ImportOfRequest,
  reading: RecordReading = {},
): Promise<ImportRecord> {
  try {
    return await fence(sql, input, reading);
  } catch (error) {
    // note: an account that no longer exists can have no import written: the worker's insert
    // would break the same foreign key (and its rows went with the account).
    if (error instanceof postgres.PostgresError && error.code === PG_FOREIGN_KEY_VIOLATION) return { state: 'failed' };
    throw error;
  }
}

async function fence(sql: Sql, input: ImportOfRequest, reading: RecordReading): Promise<ImportRecord> {
  return sql.begin(async (tx) => {
    await tx.unsafe(`set local lock_timeout = ${FENCE_LOCK_TIMEOUT_MS}`);
    const [fenced] = await tx`
      insert into imports (job_id, account_id, kind, action, request_id, received, inserted, skipped, errors, state, created_at, finished_at)
      values (${input.importId}, ${input.accountId}, ${input.kind}, ${input.action ?? 'upsert'}, ${input.requestId}, ${input.total}, 0, ${input.errors.length},
              ${tx.json(input.errors)}, 'failed', ${createdAtOf(input)}, now())
      on conflict (job_id) do nothing
      returning job_id`;
    // note: an import answered 504 before is settled now, one way or the other.
    await tx`delete from unsettled_imports where job_id = ${input.importId}`;
    if (fenced) return { state: 'failed' } as const;
    const recorded = await findImportRecord(tx, input.importId, reading);
    if (!recorded) throw new Error(`import ${input.importId} is recorded but its record cannot be read`);
    return recorded;
  });
}

/**
 * Records an import answered 504 as unsettled, so that the partner can watch it (GET
 * /v1/api/imports/{id} reads it `running`) until its record in `imports` shows how it ended.
 * note: a table of its own: its worker's transaction may hold the import's record in `imports`
 * uncommitted right now, and an insert there would wait for it. Best effort: without it the
 * import reads 404 until it ends.
 */
export async function recordImportUnsettled(sql: Sql, input: ImportOfRequest): Promise<void> {
  await sql`
    insert into unsettled_imports (job_id, account_id, kind, action, request_id, received, skipped, errors, created_at)
    values (${input.importId}, ${input.accountId}, ${input.kind}, ${input.action ?? 'upsert'}, ${input.requestId}, ${input.total}, ${input.errors.length},
            ${sql.json(input.errors)}, ${createdAtOf(input)})
    on conflict (job_id) do nothing`;
}

/**
 * Records an unsettled import (answered 504) `failed` and settles it, in one statement: its job
 * failed for good, or can no longer write; true when it did. note: only an import answered 504
 * is recorded so; a job nothing answered for (or that anything else with Redis access added) gets
 * no record, so the queue cannot add imports to an account's list. A record already there (the
 * job committed after all, or the API fenced it) stays as it is.
 */
export async function fenceUnsettledImport(sql: Sql, importId: string): Promise<boolean> {
  const [fenced] = await sql`
    with settled as (delete from unsettled_imports where job_id = ${importId} returning *)
    insert into imports (job_id, account_id, kind, action, request_id, received, inserted, skipped, errors, state, created_at, finished_at)
    select job_id, account_id, kind, action, request_id, received, 0, skipped, errors, 'failed', created_at, now() from settled
    on conflict (job_id) do nothing
    returning job_id`;
  return fenced !== undefined;
}
