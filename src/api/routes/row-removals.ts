import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ArchiveDryRunResultSchema,
  ArchiveResultSchema,
  DeleteDryRunResultSchema,
  DeleteResultSchema,
  RowRemovalBodySchema,
} from '../../shared/api-schemas/row-removals.js';
import { BulkRequestErrorSchema } from '../../shared/api-schemas/error-body.js';
import { IdempotencyHeadersSchema } from '../../shared/api-schemas/headers.js';
import { IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import type { AnyImportResult, RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { markImportStep } from '../../shared/import/import-steps.js';
import type { ApiDeps } from '../deps.js';
import { authenticatedKey } from '../authenticated.js';
import { importRouteOptions, importRouteResponses, replyWithImport } from './import-route.js';
import { BulkQuerySchema, bulkQueryRefusal, isDryRun, returnsRows } from '../import/bulk-query.js';
import { holdingInFlightSlot, runImportOf } from '../import/run-import-request.js';
import { readRowRemoval } from '../import/read-row-removal.js';
import { removalBadRequestExamples, removalBodyExamples, removalDryRunExamples, removalResultExamples } from '../openapi/removal-examples.js';
import { AUTHENTICATED, errorResponse } from '../openapi/responses.js';
import { jsonBody, jsonResponse } from '../openapi/route-schema.js';
import { DRY_RUN_BAD_REQUEST_EXAMPLES } from '../openapi/sync-examples.js';
import { takeRawBody } from '../plugins/json-body.js';

/** An archive's or delete's body: at most 1 MB (docs/catalogue.md#archive-and-delete). */
export const ROW_REMOVAL_BODY_LIMIT_BYTES = 1_048_576;

/**
 * The query of these routes: `dry_run` and `return` as the bulk routes define them, and nothing
 * else. note: a schema of their own, so that a parameter the bulk routes take (`update`) is
 * refused here.
 */
const RowRemovalQuerySchema = z.object({ dry_run: BulkQuerySchema.shape.dry_run, return: BulkQuerySchema.shape.return });

const RESULTS = {
  archive: { done: ArchiveResultSchema, dryRun: ArchiveDryRunResultSchema, verb: 'Archive', pastTense: 'archived' },
  delete: { done: DeleteResultSchema, dryRun: DeleteDryRunResultSchema, verb: 'Delete', pastTense: 'deleted' },
} as const;

function removalSchema(kind: ImportKind, action: RowRemovalAction) {
  const { done, dryRun, verb } = RESULTS[action];
  const what =
    action === 'archive'
      ? 'Archives them: each leaves the active list (a listing, the marketplace) and keeps every field and its `external_id`; an import of that `external_id` restores it. A row archived already counts as `unchanged`.'
      : 'Deletes them for good, active or archived: their `external_id`s are free again.';
  return {
    operationId: `${action}${kind[0]!.toUpperCase()}${kind.slice(1)}`,
    summary: `${verb} 1 to 1000 ${kind}`,
    description: `Names rows of the account by your ids (\`external_ids\`) or ours (\`ids\`). ${what} Every entry is checked first; an entry that is malformed, names no row of the account or repeats an earlier one is reported in \`errors\`. The others are done in one transaction, exactly once, as an import (\`action: ${action}\`). A 4xx or a 503 changed nothing. Scope \`listings:write\`.`,
    tags: ['Archive and delete'],
    security: [{ apiKey: [] }],
    headers: IdempotencyHeadersSchema,
    querystring: RowRemovalQuerySchema,
    body: jsonBody(RowRemovalBodySchema, removalBodyExamples()),
    response: {
      200: jsonResponse(z.union([done, dryRun]), {
        description: `The rows were ${RESULTS[action].pastTense}, exactly once; the failed entries are in \`errors\`. \`import_id\` and \`Location\` name the import. A dry run (\`?dry_run=true\`) answers what it would have done, with \`dry_run: true\` and no \`import_id\`, and changes nothing.`,
        headers: [...AUTHENTICATED, 'Location', 'Idempotent-Replayed'],
        // note: a dry run has no import to name
        sometimes: ['Location'],
        examples: { ...removalResultExamples(kind, action), ...removalDryRunExamples(action) },
      }),
      400: errorResponse(
        'Nothing was changed: the body is not JSON, not an object with exactly one of `external_ids` and `ids`, has no entries or more than 1000, or no entry names a row of the account; or the `Idempotency-Key` is malformed; or `dry_run` is not `true` or `false`, or is `true` with an `Idempotency-Key`; or `return` is not `rows`; or the query has a parameter other than `dry_run` and `return` (decided before the body is read).',
        { ...removalBadRequestExamples(kind), ...DRY_RUN_BAD_REQUEST_EXAMPLES },
        AUTHENTICATED,
        BulkRequestErrorSchema,
      ),
      ...importRouteResponses({ done: 'changed', bodyLimitBytes: ROW_REMOVAL_BODY_LIMIT_BYTES, reusedKey: 'another body or on another endpoint' }),
    },
  };
}

/** The answer of an archive or a delete, from the import's result (row-removal-job.ts); `rows` when the result has them (`?return=rows`). */
function answerOf(action: RowRemovalAction, result: AnyImportResult) {
  const { skipped, errors, rows } = result;
  const withRows = rows === undefined ? {} : { rows };
  return action === 'archive'
    ? { archived: result.archived ?? 0, unchanged: result.unchanged ?? 0, skipped, errors, ...withRows }
    : { deleted: result.deleted ?? 0, skipped, errors, ...withRows };
}

/**
 * `POST /v1/api/{listings,machines}/bulk-archive` and `bulk-delete` (docs/catalogue.md#archive-and-delete):
 * the checks of the bulk routes in their order (hooks, before the body is read), the entries
 * checked and looked up (readRowRemoval), then an import through the same queue, runner and
 * Idempotency-Key as a bulk request, written by a worker in one transaction (write-row-removal.ts).
 */
export async function rowRemovalRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  for (const kind of IMPORT_KIND_NAMES) {
    for (const action of ['archive', 'delete'] as const) {
      app.post(
        `/v1/api/${kind}/bulk-${action}`,
        {
          schema: removalSchema(kind, action),
          ...importRouteOptions(app, deps, {
            queryNames: Object.keys(RowRemovalQuerySchema.shape),
            queryRefusal: bulkQueryRefusal,
            bodyLimit: ROW_REMOVAL_BODY_LIMIT_BYTES,
          }),
        },
        async (request, reply) =>
          holdingInFlightSlot(request, async () => {
            const key = request.headers['idempotency-key'];
            const dryRun = isDryRun(request.query, key);
            const accountId = authenticatedKey(request).account.id;
            const returnRows = returnsRows(request.query);
            const { newImport, idempotency } = await readRowRemoval(deps.sql, takeRawBody(request), { kind, action, accountId, requestId: request.id, dryRun, key, returnRows });
            markImportStep(request.id, 'api.validated');
            const { result, replayed, importId } = await runImportOf(deps, newImport, idempotency);
            return replyWithImport(reply, deps, { kind, status: 200, dryRun, importId, replayed, result, answer: answerOf(action, result) });
          }),
      );
    }
  }
}
