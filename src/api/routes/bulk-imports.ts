import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { BULK_BODY_SCHEMAS, BulkDryRunResponseSchema, BulkResponseSchema } from '../../shared/api-schemas/bulk.js';
import { BulkRequestErrorSchema, RequestIdErrorSchema, RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { IdempotencyHeadersSchema } from '../../shared/api-schemas/headers.js';
import { IMPORT_KINDS, IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import { RowsHandOver } from '../../shared/import/rows-hand-over.js';
import type { NewImport } from '../../shared/import/import-queue.js';
import { markImportStep } from '../../shared/import/import-steps.js';
import type { ImportPreparer } from '../import/import-preparer.js';
import type { ApiDeps } from '../deps.js';
import { importRefusalError } from '../import/import-error-replies.js';
import { isImportRefusal } from '../import/import-refusal.js';
import { importLocation } from '../../shared/import-location.js';
import { holdingInFlightSlot, runImportOf } from '../import/run-import-request.js';
import { BulkQuerySchema, bulkQueryRefusal, isDryRun } from '../import/bulk-query.js';
import { bulkBadRequestExamples, bulkBodyExamples, bulkResultExamples, ERROR_EXAMPLES } from '../openapi/examples.js';
import { bulkDryRunExamples, bulkSyncBodyExamples, bulkSyncResultExamples, DRY_RUN_BAD_REQUEST_EXAMPLES } from '../openapi/sync-examples.js';
import {
  apiKeyAuthErrors,
  AUTHENTICATED,
  errorResponse,
  internalErrorResponse,
  tooLargeResponse,
  unsupportedMediaTypeResponse,
} from '../openapi/responses.js';
import { jsonBody, jsonResponse } from '../openapi/route-schema.js';
import { refusalsByPart, refuseUnknownQueryParameters, validateAllButBody } from '../route-validation.js';
import { takeRawBody } from '../plugins/json-body.js';
import { authenticatedKey } from '../authenticated.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { holdInFlightSlot } from '../limits/in-flight-cap.js';
import { shedWhenOverloaded } from '../plugins/load-shedding.js';

const { workersUnavailable, importFailed, storeUnavailable, overloaded, stillRunning, idempotencyConflict, rateMinute, rateDay, lockout, tooManyConcurrent } =
  ERROR_EXAMPLES;

function bulkSchema(kind: ImportKind) {
  const { maxRows, bodyLimitBytes } = IMPORT_KINDS[kind];
  return {
    operationId: `import${kind[0]!.toUpperCase()}${kind.slice(1)}`,
    summary: `Import 1 to ${maxRows} ${kind}`,
    description: `Validates every row first, then creates the valid rows in one transaction and reports the others in \`errors\`. A 4xx or a 503 wrote nothing. Scope \`listings:write\`.`,
    tags: ['Bulk imports'],
    security: [{ apiKey: [] }],
    headers: IdempotencyHeadersSchema,
    querystring: BulkQuerySchema,
    body: jsonBody(BULK_BODY_SCHEMAS[kind], { ...bulkBodyExamples(kind), ...bulkSyncBodyExamples(kind) }),
    response: {
      200: jsonResponse(BulkDryRunResponseSchema, {
        description: 'A dry run (`?dry_run=true`): everything an import does, the worker\'s transaction included, then rolled back. The body is what the import would have given, with `dry_run: true`; nothing was written.',
        headers: AUTHENTICATED,
        examples: bulkDryRunExamples(kind),
      }),
      201: jsonResponse(BulkResponseSchema, {
        description: 'The valid rows were created, exactly once; the others are in `errors`. `import_id` and `Location` name the import, which `GET /v1/api/imports/{id}` reads.',
        headers: [...AUTHENTICATED, 'Location', 'Idempotent-Replayed'],
        examples: { ...bulkResultExamples(kind), ...bulkSyncResultExamples() },
      }),
      400: errorResponse(
        'Nothing was written: the body is not JSON, not an object with the array, has no rows or too many, or no row is valid; or the `Idempotency-Key` is malformed; or `dry_run` is not `true` or `false`, or is `true` with an `Idempotency-Key`; or `update` is not `replace` or `merge`; or the query has a parameter other than `dry_run` and `update` (decided before the body is read).',
        { ...bulkBadRequestExamples(kind), ...DRY_RUN_BAD_REQUEST_EXAMPLES },
        AUTHENTICATED,
        BulkRequestErrorSchema,
      ),
      ...apiKeyAuthErrors({ scoped: true }),
      429: errorResponse(
        'The account\'s per-minute or per-day limit is reached, or it already has `ACCOUNT_MAX_IN_FLIGHT` imports in flight (10 by default, across all replicas), or this IP is locked out after 20 failed authentications in 5 minutes. Nothing was done; retry after `Retry-After` seconds.',
        { rateMinute, rateDay, tooManyConcurrent, lockout },
        [...AUTHENTICATED, 'Retry-After'],
        RetryLaterErrorSchema,
      ),
      413: tooLargeResponse(bodyLimitBytes, AUTHENTICATED),
      415: unsupportedMediaTypeResponse(AUTHENTICATED),
      422: errorResponse('The `Idempotency-Key` was used before with another body (or on the other bulk endpoint). Nothing was written.', {
        idempotencyConflict,
      }, AUTHENTICATED),
      500: internalErrorResponse(AUTHENTICATED),
      503: errorResponse(
        'Nothing was written; retry after `Retry-After` seconds, with the same `Idempotency-Key`. `Service overloaded, retry shortly`: this API process is overloaded (decided after the in-flight cap, before the body is read), or too many large bodies wait to be read.',
        { workersUnavailable, importFailed, storeUnavailable, overloaded },
        [...AUTHENTICATED, 'Retry-After', 'Location'],
        RetryLaterErrorSchema,
        // note: only the two "nothing was written" answers of an import that was recorded (not a dry run)
        ['Location'],
      ),
      504: errorResponse(
        'The import is still running and its outcome is not known yet. Watch it at `Location` (`GET /v1/api/imports/{id}`) until it reads `completed` or `failed`, or retry with the same `Idempotency-Key`: you get its real result, never a second copy.',
        { stillRunning },
        [...AUTHENTICATED, 'Location'],
        RequestIdErrorSchema,
        // note: a dry run has no import to watch
        ['Location'],
      ),
    },
  };
}

/**
 * Reads, validates and encodes the request's body (on a thread when it is large), which the
 * request no longer holds: 400 for invalid JSON or refused rows.
 * note: apart from the handler: V8 keeps the variables of an async function alive while it
 * awaits, and nothing of the body (up to 2 MB, several times that once parsed) needs to outlive
 * this step while the import runs.
 */
async function readImport(
  kind: ImportKind,
  request: FastifyRequest,
  { dryRun, key, merge }: { dryRun: boolean; key: string | undefined; merge: boolean },
  preparer: ImportPreparer,
): Promise<{ newImport: NewImport; idempotency?: { key: string; hash: Buffer } }> {
  const bytes = takeRawBody(request);
  const outcome = await preparer.prepare(kind, bytes, key !== undefined, merge);
  if (isImportRefusal(outcome)) throw importRefusalError(outcome);
  markImportStep(request.id, 'api.validated');
  const { total, errors, rowCount, matchExternalIds, rows, hash } = outcome;
  const newImport: NewImport = {
    kind,
    accountId: authenticatedKey(request).account.id,
    requestId: request.id,
    total,
    errors,
    rowCount,
    matchExternalIds,
    merge,
    dryRun,
    createdAt: Date.now(),
    rows: new RowsHandOver(rows),
  };
  return { newImport, ...(key !== undefined && hash ? { idempotency: { key, hash: Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength) } } : {}) };
}

/**
 * `POST /v1/api/machines/bulk` and `POST /v1/api/listings/bulk` (docs/endpoints.md#bulk-imports): authenticate
 * (hook, before the body is read), validate every row, hand the valid ones to a worker in one
 * job, await it, reply 201. With an Idempotency-Key a repeat never inserts again.
 */
export async function bulkImportRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  for (const kind of IMPORT_KIND_NAMES) {
    app.post(
      `/v1/api/${kind}/bulk`,
      {
        schema: bulkSchema(kind),
        // note: the rows are checked one by one (a failing row is skipped, not fatal), the rest
        // by the schema.
        validatorCompiler: validateAllButBody,
        schemaErrorFormatter: refusalsByPart({ querystring: bulkQueryRefusal, headers: apiErrors.idempotencyKeyMalformed }),
        bodyLimit: IMPORT_KINDS[kind].bodyLimitBytes,
        config: { auth: 'api-key', requiredScope: 'listings:write', jsonBodyAsBytes: true },
        // note: in the order of docs/access.md#order-of-checks; the body is read after them.
        onRequest: [
          apiKeyAuth(deps),
          holdInFlightSlot(deps.inFlight, deps.metrics),
          shedWhenOverloaded(app),
          refuseUnknownQueryParameters(Object.keys(BulkQuerySchema.shape)),
        ],
      },
      async (request, reply) =>
        holdingInFlightSlot(request, async () => {
          // note: the query and the key's format were checked by the route's schemas.
          const key = request.headers['idempotency-key'];
          const dryRun = isDryRun(request.query, key);
          const merge = request.query.update === 'merge';
          const { newImport, idempotency } = await readImport(kind, request, { dryRun, key, merge }, deps.importPreparer);
          const { result, replayed, importId } = await runImportOf(deps, newImport, idempotency);
          if (newImport.dryRun) return await reply.code(200).send({ ...result, dry_run: true });
          // note: a replay wrote nothing, so its rows are not counted again.
          if (replayed) reply.header('idempotent-replayed', 'true');
          else deps.metrics.recordRows(kind, result);
          return await reply.code(201).header('location', importLocation(importId)).send({ ...result, import_id: importId });
        }),
    );
  }
}
