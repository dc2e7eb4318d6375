import postgres from 'postgres';
import type { Sql, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { ImportResult, ImportJobData } from '../import/import-job.js';

/**
 * What the `imports` table says of a job: `completed` with the result it wrote; `failed`:
 * recorded before an answer said it wrote nothing, so it never will (recordImportNotWritten); or
 * `running`: answered 504 while its job was writing (recordImportRunning), outcome not known yet.
 */
export type ImportRecord = { state: 'completed'; result: ImportResult } | { state: 'failed' } | { state: 'running' };

const PG_FOREIGN_KEY_VIOLATION = '23503';

/** A request's import as the API knows it, to record it before or without its worker. */
export interface ImportOfRequest {
  jobId: string;
  accountId: string;
  kind: ImportKind;
  requestId: string;
  /** rows sent, valid or not */
  total: number;
  errors: ImportJobData['errors'];
  /** when the API accepted it, ms since the epoch */
  createdAt?: number;
}

/** The import's `created_at`: when the API accepted it, else now. */
export function createdAtOf(input: { createdAt?: number }): Date {
  return input.createdAt === undefined ? new Date() : new Date(input.createdAt);
}

/**
 * How long the fence waits for a worker's transaction that holds the job's record. note: the
 * worker inserts the record first thing in its transaction, so a wait means a transaction is
 * writing that job right now (or is frozen): its outcome is not known, and the caller says so
 * rather than hold a request for as long as the transaction may last.
 */
const FENCE_LOCK_TIMEOUT_MS = 2_000;

export async function findImportRecord(sql: Sql | TransactionSql, jobId: string): Promise<ImportRecord | undefined> {
  const [recorded] = await sql<(ImportResult & { state: string; updated: number | null; unchanged: number | null })[]>`
    select state, inserted, updated, unchanged, skipped, errors from imports where job_id = ${jobId}`;
  if (!recorded) return undefined;
  if (recorded.state === 'failed') return { state: 'failed' };
  if (recorded.state === 'running') return { state: 'running' };
  const { inserted, updated, unchanged, skipped, errors } = recorded;
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
): Promise<ImportRecord> {
  try {
    return await fence(sql, input);
  } catch (error) {
    // note: an account that no longer exists can have no import written: the worker's insert
    // would break the same foreign key (and its rows went with the account).
    if (error instanceof postgres.PostgresError && error.code === PG_FOREIGN_KEY_VIOLATION) return { state: 'failed' };
    throw error;
  }
}

async function fence(sql: Sql, input: ImportOfRequest): Promise<ImportRecord> {
  return sql.begin(async (tx) => {
    await tx.unsafe(`set local lock_timeout = ${FENCE_LOCK_TIMEOUT_MS}`);
    // note: a record left `running` by a 504 is the API's own, not a worker's: it turns `failed`.
    const [fenced] = await tx`
      insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at, finished_at)
      values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId}, ${input.total}, 0, ${input.errors.length},
              ${tx.json(input.errors)}, 'failed', ${createdAtOf(input)}, now())
      on conflict (job_id) do update set state = 'failed', finished_at = now()
        where imports.state = 'running' and imports.source = 'request'
      returning job_id`;
    if (fenced) return { state: 'failed' } as const;
    const recorded = await findImportRecord(tx, input.jobId);
    if (!recorded) throw new Error(`import ${input.jobId} is recorded but its record cannot be read`);
    return recorded;
  });
}

/**
 * Records an import answered 504 as `running`, unless it is recorded already, so that the partner
 * can watch it (GET /v1/api/imports/{id}) until its worker records how it ended: the worker's
 * insert completes a `running` record, the fence fails it. note: best effort: without it the
 * import reads 404 until it ends.
 */
export async function recordImportRunning(sql: Sql, input: ImportOfRequest): Promise<void> {
  await sql`
    insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at)
    values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId}, ${input.total}, 0, ${input.errors.length},
            ${sql.json(input.errors)}, 'running', ${createdAtOf(input)})
    on conflict (job_id) do nothing`;
}

/**
 * Records an import answered 504 (`running`) whose job then failed for good as `failed`; true
 * when it did. note: an update of that record only: a job nothing recorded (the API answered
 * before it failed, or it came from anything else with Redis access) gets no record, so the queue
 * cannot add imports to an account's list.
 */
export async function failRunningImport(sql: Sql, jobId: string): Promise<boolean> {
  const failed = await sql`
    update imports set state = 'failed', finished_at = now()
    where job_id = ${jobId} and state = 'running' and source = 'request'`;
  return failed.count === 1;
}
