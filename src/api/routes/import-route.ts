import type { FastifyInstance, FastifyReply } from 'fastify';
import { RequestIdErrorSchema, RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { AnyImportResult } from '../../shared/import/row-removal-job.js';
import { importLocation } from '../../shared/import-location.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import type { ApiDeps } from '../deps.js';
import { holdInFlightSlot } from '../limits/in-flight-cap.js';
import { ERROR_EXAMPLES } from '../openapi/examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, errorResponse, internalErrorResponse, tooLargeResponse, unsupportedMediaTypeResponse } from '../openapi/responses.js';
import { shedWhenOverloaded } from '../plugins/load-shedding.js';
import { refusalsByPart, refuseUnknownQueryParameters, validateAllButBody } from '../route-validation.js';

/**
 * What every route that runs an import through the queue shares (the bulk imports, archives and
 * deletes): its checks before the body is read, in the order of docs/access.md#order-of-checks;
 * the answers that are not its own; and the reply that names the import.
 */

/**
 * The route's options: authentication, tier, quota and scope (apiKeyAuth), the in-flight cap, load
 * shedding, then the query's names; the body is read after them, as bytes, and checked entry by
 * entry by the route (a failing entry is reported, not fatal), the rest by the schemas.
 */
export function importRouteOptions(
  app: FastifyInstance,
  deps: ApiDeps,
  route: { queryNames: readonly string[]; queryRefusal: Parameters<typeof refusalsByPart>[0]['querystring']; bodyLimit: number },
) {
  return {
    validatorCompiler: validateAllButBody,
    schemaErrorFormatter: refusalsByPart({ querystring: route.queryRefusal, headers: apiErrors.idempotencyKeyMalformed }),
    bodyLimit: route.bodyLimit,
    config: { auth: 'api-key' as const, requiredScope: 'listings:write' as const, jsonBodyAsBytes: true },
    onRequest: [apiKeyAuth(deps), holdInFlightSlot(deps.inFlight, deps.metrics), shedWhenOverloaded(app), refuseUnknownQueryParameters(route.queryNames)],
  };
}

const { workersUnavailable, importFailed, storeUnavailable, overloaded, stillRunning, idempotencyConflict, rateMinute, rateDay, lockout, tooManyConcurrent } =
  ERROR_EXAMPLES;

/**
 * The document's answers of an import route other than its own 200/201 and 400: the refusals of
 * authentication and limits, the body's size and type, a reused Idempotency-Key, and the
 * import's own 503 and 504. `done` says what an import does to rows (`written`, `changed`).
 */
export function importRouteResponses(route: { done: 'written' | 'changed'; bodyLimitBytes: number; reusedKey: string }) {
  const nothing = `Nothing was ${route.done}`;
  return {
    ...apiKeyAuthErrors({ scoped: true }),
    429: errorResponse(
      'The account\'s per-minute or per-day limit is reached, or it already has `ACCOUNT_MAX_IN_FLIGHT` imports in flight (10 by default, across all replicas), or this IP is locked out after 20 failed authentications in 5 minutes. Nothing was done; retry after `Retry-After` seconds.',
      { rateMinute, rateDay, tooManyConcurrent, lockout },
      [...AUTHENTICATED, 'Retry-After'],
      RetryLaterErrorSchema,
    ),
    413: tooLargeResponse(route.bodyLimitBytes, AUTHENTICATED),
    415: unsupportedMediaTypeResponse(AUTHENTICATED),
    422: errorResponse(`The \`Idempotency-Key\` was used before with ${route.reusedKey}. ${nothing}.`, { idempotencyConflict }, AUTHENTICATED),
    500: internalErrorResponse(AUTHENTICATED),
    503: errorResponse(
      `${nothing}; retry after \`Retry-After\` seconds, with the same \`Idempotency-Key\`. \`Service overloaded, retry shortly\`: this API process is overloaded (decided after the in-flight cap, before the body is read), or too many large bodies wait to be read.`,
      { workersUnavailable, importFailed, storeUnavailable, overloaded },
      [...AUTHENTICATED, 'Retry-After', 'Location'],
      RetryLaterErrorSchema,
      // note: only the two "nothing was written" answers of an import that was recorded (not a dry run)
      ['Location'],
    ),
    504: errorResponse(
      'The import is still running and its outcome is not known yet. Watch it at `Location` (`GET /v1/api/imports/{id}`) until it reads `completed` or `failed`, or retry with the same `Idempotency-Key`: you get its real result, never a second run.',
      { stillRunning },
      [...AUTHENTICATED, 'Location'],
      RequestIdErrorSchema,
      // note: a dry run has no import to watch
      ['Location'],
    ),
  };
}

/**
 * Replies with an import's answer: a dry run's 200 with `dry_run: true` and no import; otherwise
 * `status` with the import's id and `Location`, marked `Idempotent-Replayed` when it replays an
 * earlier request (whose rows are not counted again in the metrics).
 */
export async function replyWithImport(
  reply: FastifyReply,
  deps: Pick<ApiDeps, 'metrics'>,
  outcome: { kind: ImportKind; status: 200 | 201; dryRun: boolean; importId: string; replayed: boolean; result: AnyImportResult; answer: object },
): Promise<FastifyReply> {
  const { kind, status, dryRun, importId, replayed, result, answer } = outcome;
  if (dryRun) return reply.code(200).send({ ...answer, dry_run: true as const });
  if (replayed) reply.header('idempotent-replayed', 'true');
  else deps.metrics.recordRows(kind, result);
  return reply.code(status).header('location', importLocation(importId)).send({ ...answer, import_id: importId });
}
