import type { Sql } from '../../src/shared/infra/db.js';

/** What one import left in the tables: its listings and its `imports` record (0 or 1). */
export async function writtenByImport(sql: Sql, importId: string): Promise<{ listings: number; imports: number }> {
  const [listings] = await sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`;
  const [imports] = await sql<{ n: number }[]>`select count(*)::int as n from imports where job_id = ${importId}`;
  return { listings: listings!.n, imports: imports!.n };
}
