import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import { serveRequest, type ClientContext, type ServedRecord } from './soak-client.js';
import type { CatalogueOp, CatalogueWrite } from './soak-catalogue-log.js';
import { catalogueListing, type WritePlan } from './soak-catalogue-plan.js';
import type { SlowUploadContext } from './soak-slow-uploads.js';

/** What the catalogue clients share: how to send (one key per catalogue account), the tables, and each account's log. */
export interface CatalogueContext {
  /** bulk writes, archives and deletes, sent and retried as a partner client's imports are */
  client: ClientContext;
  /** mirrors, uploaded a line at a time and retried as the slow uploads are */
  uploads: SlowUploadContext;
  sql: postgres.Sql;
  accountIds: string[];
  /** each account's operations, in the order its client sent them */
  logs: CatalogueOp[][];
}

const PATHS: Record<WritePlan['type'], string> = {
  upsert: '/v1/api/listings/bulk',
  merge: '/v1/api/listings/bulk?update=merge',
  archive: '/v1/api/listings/bulk-archive',
  delete: '/v1/api/listings/bulk-delete',
};

function bodyOf(plan: WritePlan): string {
  if ('ids' in plan) return JSON.stringify({ external_ids: plan.ids });
  // note: a merge carries only what it changes; an upsert the whole row.
  return JSON.stringify({ listings: plan.rows.map((row) => (plan.type === 'merge' ? { external_id: row.id, price_cents: row.price } : catalogueListing(row))) });
}

/**
 * Sends one write of the account until it is answered (serveRequest: the same body and
 * Idempotency-Key on every attempt, hang-ups included), logged in `into` before it is sent, with
 * the moments it was sent and answered and the answer.
 */
export async function sendWrite(ctx: CatalogueContext, account: number, requestIdPrefix: string, plan: WritePlan, into: { push(op: CatalogueWrite): number }): Promise<void> {
  const op = { ...plan, sentAt: Date.now(), requestIdPrefix } as CatalogueWrite;
  into.push(op);
  const record: ServedRecord = { startedAtMs: ctx.client.now(), attempts: [] };
  const answer = await serveRequest(
    ctx.client,
    {
      path: PATHS[plan.type],
      body: bodyOf(plan),
      idempotencyKey: `${requestIdPrefix}-${randomUUID()}`,
      requestIdPrefix,
      client: account,
      accountIndex: account,
      success: plan.type === 'archive' || plan.type === 'delete' ? 200 : 201,
      label: `catalogue=${account} ${plan.type} ${requestIdPrefix}`,
    },
    record,
  );
  op.end = record.end ?? 'interrupted';
  if (answer !== undefined) {
    op.answeredAt = Date.now();
    if (answer.json !== undefined) op.answer = answer.json;
  }
}
