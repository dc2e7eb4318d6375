import type postgres from 'postgres';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { markersOf } from './soak-rows.js';

/** What the checks need to know of one logical import. */
export interface LedgerEntry {
  key: string;
  kind: ImportKind;
  /** `soak-<client>-<seq>`; the row markers are `<prefix>-<row>` */
  markerPrefix: string;
  rows: number;
  invalid: readonly number[];
  /** answered 201 at least once */
  answered: boolean;
}

/** One row marker as the tables hold it: how many copies, and the jobs that wrote them. */
interface Stored {
  copies: number;
  jobs: (string | null)[];
}

export interface ImportProblem {
  key: string;
  kind: ImportKind;
  markerPrefix: string;
  answered: boolean;
  /** valid rows of an import answered 201 that are not in the table */
  lost: string[];
  /** rows found more than once, with the jobs that wrote each copy */
  duplicated: { marker: string; copies: number; jobs: (string | null)[] }[];
  /** rows of an import never answered 201 that are in the table */
  writtenWithout201: string[];
  /** rows that fail validation (the 201 said skipped) that are in the table */
  invalidWritten: string[];
  /** every job that wrote a row of this import */
  jobs: string[];
}

export interface RowCheck {
  /** valid rows of the imports answered 201 */
  expected: number;
  /** rows in the tables, all of them */
  found: number;
  lost: number;
  /** copies beyond the first, over all rows */
  duplicated: number;
  /** rows written more than once */
  duplicatedRows: number;
  writtenWithout201: number;
  invalidWritten: number;
  /** rows whose marker no logical import of the run has */
  unknown: number;
  unknownMarkers: string[];
  problems: ImportProblem[];
}

async function storedByMarker(sql: postgres.Sql, exceptAccounts: readonly string[]): Promise<Map<string, Stored>> {
  // note: listings are told apart by title, machines by model number: the soak puts its marker
  // there. The markers of the two kinds never collide (an import is of one kind).
  const except = sql.array(exceptAccounts as string[]);
  const rows = await sql<{ marker: string | null; copies: number; jobs: (string | null)[] }[]>`
    select title as marker, count(*)::int as copies, array_agg(import_job_id order by created_at, id) as jobs
    from listings where account_id <> all(${except}::uuid[]) group by title
    union all
    select model_number as marker, count(*)::int as copies, array_agg(import_job_id order by created_at, id) as jobs
    from machines where account_id <> all(${except}::uuid[]) group by model_number`;
  const stored = new Map<string, Stored>();
  for (const row of rows) {
    const marker = row.marker ?? '(null)';
    const known = stored.get(marker);
    if (known) {
      known.copies += row.copies;
      known.jobs.push(...row.jobs);
    } else {
      stored.set(marker, { copies: row.copies, jobs: row.jobs });
    }
  }
  return stored;
}

/**
 * Compares the tables with what the partners were told: every valid row of an import answered
 * 201 exactly once; no row of an import never answered 201; no row that failed validation; no
 * row the run did not send. The rows of `exceptAccounts` are not looked at: the catalogue's
 * accounts, whose rows are changed and removed on purpose, have a check of their own
 * (soak-catalogue-check.ts).
 */
export async function checkRows(sql: postgres.Sql, ledger: readonly LedgerEntry[], exceptAccounts: readonly string[] = []): Promise<RowCheck> {
  const stored = await storedByMarker(sql, exceptAccounts);
  const check: RowCheck = {
    expected: 0,
    found: [...stored.values()].reduce((sum, s) => sum + s.copies, 0),
    lost: 0,
    duplicated: 0,
    duplicatedRows: 0,
    writtenWithout201: 0,
    invalidWritten: 0,
    unknown: 0,
    unknownMarkers: [],
    problems: [],
  };
  const seen = new Set<string>();
  for (const entry of ledger) {
    const markers = markersOf(entry.markerPrefix, entry.rows, entry.invalid);
    const problem: ImportProblem = {
      key: entry.key,
      kind: entry.kind,
      markerPrefix: entry.markerPrefix,
      answered: entry.answered,
      lost: [],
      duplicated: [],
      writtenWithout201: [],
      invalidWritten: [],
      jobs: [],
    };
    const jobs = new Set<string>();
    for (const marker of [...markers.valid, ...markers.invalid]) {
      seen.add(marker);
      for (const job of stored.get(marker)?.jobs ?? []) if (job !== null) jobs.add(job);
    }
    if (entry.answered) check.expected += markers.valid.length;
    for (const marker of markers.valid) {
      const copies = stored.get(marker)?.copies ?? 0;
      if (entry.answered && copies === 0) problem.lost.push(marker);
      if (!entry.answered && copies > 0) problem.writtenWithout201.push(marker);
      if (copies > 1) problem.duplicated.push({ marker, copies, jobs: stored.get(marker)!.jobs });
    }
    for (const marker of markers.invalid) {
      if ((stored.get(marker)?.copies ?? 0) > 0) problem.invalidWritten.push(marker);
    }
    check.lost += problem.lost.length;
    check.writtenWithout201 += problem.writtenWithout201.length;
    check.invalidWritten += problem.invalidWritten.length;
    check.duplicatedRows += problem.duplicated.length;
    check.duplicated += problem.duplicated.reduce((sum, d) => sum + d.copies - 1, 0);
    if (problem.lost.length + problem.duplicated.length + problem.writtenWithout201.length + problem.invalidWritten.length > 0) {
      problem.jobs = [...jobs];
      check.problems.push(problem);
    }
  }
  for (const [marker, { copies }] of stored) {
    if (seen.has(marker)) continue;
    check.unknown += copies;
    if (check.unknownMarkers.length < 20) check.unknownMarkers.push(marker);
  }
  return check;
}

/** The Idempotency-Key claims of some keys: which job each key points at now. */
export async function claimsOf(sql: postgres.Sql, keys: string[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const rows = await sql<{ idempotency_key: string; job_id: string }[]>`
    select idempotency_key, job_id from idempotency_keys where idempotency_key in ${sql(keys)}`;
  return new Map(rows.map((row) => [row.idempotency_key, row.job_id]));
}
