import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { BULK_BODY_SCHEMAS, BulkDryRunResponseSchema, BulkResponseSchema } from '../../shared/api-schemas/bulk.js';
import { BulkRequestErrorSchema } from '../../shared/api-schemas/error-body.js';
import { IdempotencyHeadersSchema } from '../../shared/api-schemas/headers.js';
import { IMPORT_KINDS, IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import { RowsHandOver } from '../../shared/import/rows-hand-over.js';
import type { NewImport } from '../../shared/import/import-queue.js';
import { markImportStep } from '../../shared/import/import-steps.js';
import type { ImportPreparer } from '../import/import-preparer.js';
import type { ImportRunner } from '../import/import-runner.js';
import type { ApiDeps } from '../deps.js';
import { importRefusalError } from '../import/import-error-replies.js';
import { isImportRefusal } from '../import/import-refusal.js';
import { holdingInFlightSlot, runImportOf } from '../import/run-import-request.js';
import { BulkQuerySchema, bulkQueryRefusal, isDryRun, returnsRows } from '../import/bulk-query.js';
import { bulkBadRequestExamples, bulkBodyExamples, bulkResultExamples } from '../openapi/examples.js';
import { bulkDryRunExamples, bulkRowsResultExamples, bulkSyncBodyExamples, bulkSyncResultExamples, DRY_RUN_BAD_REQUEST_EXAMPLES } from '../openapi/sync-examples.js';
import { AUTHENTICATED, errorResponse } from '../openapi/responses.js';
import { jsonBody, jsonResponse } from '../openapi/route-schema.js';
import { takeRawBody } from '../plugins/json-body.js';
import { authenticatedKey } from '../authenticated.js';
import { importRouteOptions, importRouteResponses, replyWithImport } from './import-route.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';

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
        examples: { ...bulkResultExamples(kind), ...bulkSyncResultExamples(), ...bulkRowsResultExamples() },
      }),
      400: errorResponse(
        'Nothing was written: the body is not JSON, not an object with the array, has no rows or too many, or no row is valid; or the `Idempotency-Key` is malformed; or `dry_run` is not `true` or `false`, or is `true` with an `Idempotency-Key`; or `update` is not `replace` or `merge`; or `return` is not `rows`; or the query has a parameter other than `dry_run`, `update` and `return` (decided before the body is read).',
        { ...bulkBadRequestExamples(kind), ...DRY_RUN_BAD_REQUEST_EXAMPLES },
        AUTHENTICATED,
        BulkRequestErrorSchema,
      ),
      ...importRouteResponses({ done: 'written', bodyLimitBytes, reusedKey: 'another body (or on the other bulk endpoint)' }),
    },
  };
}

/**
 * Reads, validates and encodes the request's body (on a preparing thread, or inline when it is the
 * only import in flight: ImportPreparer), which the request no longer holds: 400 for invalid JSON
 * or refused rows.
 * note: apart from the handler: V8 keeps the variables of an async function alive while it
 * awaits, and nothing of the body (up to 2 MB, several times that once parsed) needs to outlive
 * this step while the import runs.
 */
async function readImport(
  kind: ImportKind,
  request: FastifyRequest,
  { dryRun, key, update, returnRows }: { dryRun: boolean; key: string | undefined; update: UpdateMode; returnRows: boolean },
  { preparer, runner }: { preparer: ImportPreparer; runner: ImportRunner },
): Promise<{ newImport: NewImport; idempotency?: { key: string; hash: Buffer } }> {
  const bytes = takeRawBody(request);
  const outcome = await preparer.prepare({ kind, update, withHash: key !== undefined, returnRows }, bytes, { alone: runner.inFlight === 0 });
  if (isImportRefusal(outcome)) throw importRefusalError(outcome);
  markImportStep(request.id, 'api.validated');
  const { total, errors, rowCount, matchExternalIds, rows, rowsFormat, hash } = outcome;
  const newImport: NewImport = {
    kind,
    accountId: authenticatedKey(request).account.id,
    requestId: request.id,
    total,
    errors,
    rowCount,
    matchExternalIds,
    merge: isMerge(update),
    dryRun,
    // note: left out unless asked, so that the job of any other request is what it was
    ...(returnRows ? { returnRows } : {}),
    createdAt: Date.now(),
    rowsFormat,
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
        ...importRouteOptions(app, deps, {
          queryNames: Object.keys(BulkQuerySchema.shape),
          queryRefusal: bulkQueryRefusal,
          bodyLimit: IMPORT_KINDS[kind].bodyLimitBytes,
        }),
      },
      async (request, reply) =>
        holdingInFlightSlot(request, async () => {
          // note: the query and the key's format were checked by the route's schemas.
          const key = request.headers['idempotency-key'];
          const dryRun = isDryRun(request.query, key);
          const update = request.query.update ?? 'replace';
          const returnRows = returnsRows(request.query);
          const { newImport, idempotency } = await readImport(kind, request, { dryRun, key, update, returnRows }, { preparer: deps.importPreparer, runner: deps.importRunner });
          const { result, replayed, importId } = await runImportOf(deps, newImport, idempotency);
          return replyWithImport(reply, deps, { kind, status: 201, dryRun, importId, replayed, result, answer: result });
        }),
    );
  }
}
