import type { Sql } from '../../src/shared/infra/db.js';

/** What one import job left in the tables: its listings and its `imports` record (0 or 1). */
export async function writtenByJob(sql: Sql, jobId: string): Promise<{ listings: number; imports: number }> {
  const [listings] = await sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${jobId}`;
  const [imports] = await sql<{ n: number }[]>`select count(*)::int as n from imports where job_id = ${jobId}`;
  return { listings: listings!.n, imports: imports!.n };
}
