import postgres from 'postgres';
import { Job } from 'bullmq';
import { createImportQueue } from '../../src/shared/import/import-queue.js';
import { loadConfig } from '../../src/shared/infra/config.js';
import { createRedis } from '../../src/shared/infra/redis.js';
import type { ServiceProcess } from './processes.js';

/** An import a failover test's client gave up on, as the client saw it. */
export interface StuckImport {
  key: string;
  /** the import's id, from the `Location` of an answer that had one */
  importId?: string;
  /** each answer and when it came, in ms after the primary's death */
  answers: string[];
}

/**
 * What the stack knows of imports that never got their 201, for the failure's report: the job's
 * state in the queue, the import's record and the sessions on the new primary, and the lines the
 * processes logged about it. note: a diagnosis, printed before the assertion that fails; an
 * import stuck for a minute after a failover was seen once in CI and never here.
 */
export async function reportStuckImports(stuck: readonly StuckImport[], env: Record<string, string>, promotedUrl: string, parts: readonly ServiceProcess[]): Promise<string> {
  if (stuck.length === 0) return '';
  const config = loadConfig(env);
  const redis = createRedis(config, 'producer');
  const queue = createImportQueue(config, redis);
  const sql = postgres(promotedUrl, { max: 1, onnotice: () => {} });
  const lines: string[] = [];
  try {
    for (const { key, importId, answers } of stuck) {
      lines.push(`${key} (import ${importId ?? 'unknown'}): ${answers.join(', ')}`);
      if (importId === undefined) continue;
      const job = await Job.fromId(queue, importId);
      const state = job === undefined ? 'gone' : await job.getState();
      lines.push(`  job: ${state}, attempts made ${job?.attemptsMade ?? '-'}, failed reason ${job?.failedReason ?? '-'}, processed on ${job?.processedBy ?? '-'}`);
      const records = await sql`select state, inserted, started_at, finished_at from imports where job_id = ${importId}`;
      lines.push(`  record: ${JSON.stringify(records)}`);
      for (const part of parts) {
        for (const line of part.output.filter((l) => l.includes(importId)).slice(-10)) lines.push(`  ${part.part}: ${line.slice(0, 300)}`);
      }
    }
    const sessions = await sql`
      select application_name, state, wait_event_type, wait_event, now() - query_start as running_for, left(query, 80) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    lines.push(`sessions on the new primary: ${JSON.stringify(sessions)}`);
  } catch (error) {
    lines.push(`(the report stopped: ${String(error)})`);
  } finally {
    await sql.end({ timeout: 5 });
    await queue.close();
    redis.disconnect();
  }
  return lines.join('\n');
}
