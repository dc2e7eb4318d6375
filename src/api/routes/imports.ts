import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { ImportErrorListSchema, ImportIdParamsSchema, ImportListSchema, ImportSchema } from '../../shared/api-schemas/imports.js';
import { IdParameterSchema } from '../../shared/api-schemas/id-parameter.js';
import { pageLimitSchema } from '../../shared/api-schemas/page-limit.js';
import { wholeNumberParameter } from '../../shared/api-schemas/whole-number.js';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORTS_PATH } from '../../shared/import-location.js';
import { cancelFileImport } from '../../shared/repositories/import-files.js';
import { findImport, listImportErrors, listImports } from '../../shared/repositories/import-lookups.js';
import type { Scope } from '../../shared/access/scopes.js';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import { importErrorsCsv, importResource } from '../import/import-resource.js';
import {
  IMPORT_CANCEL_BAD_REQUEST_EXAMPLES,
  IMPORT_CANCEL_EXAMPLES,
  IMPORT_CANCEL_UNAVAILABLE_EXAMPLES,
  IMPORT_ERROR_LIST_EXAMPLES,
  IMPORT_ERRORS_BAD_REQUEST_EXAMPLES,
  IMPORT_ERRORS_CSV_EXAMPLE,
  IMPORT_EXAMPLES,
  IMPORT_GET_BAD_REQUEST_EXAMPLES,
  IMPORT_LIST_BAD_REQUEST_EXAMPLES,
  IMPORT_LIST_EXAMPLES,
  IMPORT_NOT_FOUND_EXAMPLES,
} from '../openapi/import-examples.js';
import {
  apiKeyAuthErrors,
  AUTHENTICATED,
  errorResponse,
  internalErrorResponse,
  tooLargeResponse,
  unavailableResponse,
  unsupportedMediaTypeResponse,
  urlTooLongResponse,
} from '../openapi/responses.js';
import { jsonBody, jsonResponse } from '../openapi/route-schema.js';
import { IgnoredBodySchema } from '../../shared/api-schemas/ignored-body.js';
import { example } from '../openapi/examples.js';
import { refusalsByPart, refuseUnknownQueryParameters } from '../route-validation.js';

/** Reading imports needs one of these; a key with neither is told the first (docs/imports.md). */
const READ_SCOPES: readonly [Scope, ...Scope[]] = ['jobs:read', 'listings:write'];

/** The server's body limit (app.ts), which a body sent to cancel meets: the route ignores it. */
const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024;

const LIST_MAX = 100;
const ERRORS_MAX = 1_000;

const ListQuerySchema = z.object({
  limit: pageLimitSchema(LIST_MAX, 20),
  starting_after: IdParameterSchema.optional().meta({ description: 'An import id: the page starts after it (the last id of the previous page).' }),
});

const ErrorsQuerySchema = z.object({
  limit: pageLimitSchema(ERRORS_MAX, 100),
  starting_after: wholeNumberParameter(z.number().int().min(0))
    .optional()
    .meta({ description: 'A row index: the page starts after it (the last `index` of the previous page).' }),
});

const common = { tags: ['Imports'], security: [{ apiKey: [] }] };
const readErrors = () => ({
  ...apiKeyAuthErrors({ scoped: true, scope: 'jobs_read' }),
  500: internalErrorResponse(AUTHENTICATED),
  503: unavailableResponse(AUTHENTICATED),
});
const notFound = () => errorResponse('Not one of the account\'s imports: unknown, another account\'s, malformed, or purged after its retention.', IMPORT_NOT_FOUND_EXAMPLES, AUTHENTICATED);

/** The first failing query parameter's answer. */
const queryRefusal = (limitMax: number, startingAfter: () => ApiError) => (errors: readonly FastifySchemaValidationError[]) =>
  errors[0]?.instancePath === '/starting_after' ? startingAfter() : apiErrors.pageLimitMalformed(limitMax);

/** note: an id no import can have is answered as an unknown one, whatever else the request holds. */
const idRefusal = () => apiErrors.importNotFound();

const getSchema = {
  ...common,
  operationId: 'getImport',
  summary: 'An import',
  description: 'Its state, times and counts. Scope `jobs:read` or `listings:write`. Counts toward the rate limits. An import answered 504 can be read until it ends.',
  params: ImportIdParamsSchema,
  response: {
    200: jsonResponse(ImportSchema, { description: 'The import.', headers: AUTHENTICATED, examples: IMPORT_EXAMPLES }),
    400: errorResponse('The query has a parameter (the route takes none).', IMPORT_GET_BAD_REQUEST_EXAMPLES, AUTHENTICATED),
    ...readErrors(),
    404: notFound(),
    414: urlTooLongResponse(),
  },
};

const listSchema = {
  ...common,
  operationId: 'listImports',
  summary: 'The account\'s imports',
  description: 'Newest first, a page at a time (`limit`, `starting_after`, `has_more`). Scope `jobs:read` or `listings:write`.',
  querystring: ListQuerySchema,
  response: {
    200: jsonResponse(ImportListSchema, { description: 'A page of imports.', headers: AUTHENTICATED, examples: IMPORT_LIST_EXAMPLES }),
    400: errorResponse('`limit` is not a whole number from 1 to 100, `starting_after` names no import of the account, or the query has another parameter.', IMPORT_LIST_BAD_REQUEST_EXAMPLES, AUTHENTICATED),
    ...readErrors(),
  },
};

const errorsSchema = {
  ...common,
  operationId: 'listImportErrors',
  summary: 'An import\'s failed rows',
  description:
    'The failed rows in index order, a page at a time; with `Accept: text/csv` the whole list as one CSV download (`index,external_id,field,code,message`, or `index,id,...` for an archive or delete by `ids`; a line per problem; a cell that a spreadsheet would run as a formula starts with `\'`). Scope `jobs:read` or `listings:write`.',
  params: ImportIdParamsSchema,
  querystring: ErrorsQuerySchema,
  response: {
    200: jsonResponse(ImportErrorListSchema, {
      description: 'A page of failed rows, or with `Accept: text/csv` all of them as CSV.',
      headers: AUTHENTICATED,
      examples: IMPORT_ERROR_LIST_EXAMPLES,
      csv: { example: IMPORT_ERRORS_CSV_EXAMPLE },
    }),
    400: errorResponse('`limit` is not a whole number from 1 to 1000, `starting_after` is not a row index, or the query has another parameter.', IMPORT_ERRORS_BAD_REQUEST_EXAMPLES, AUTHENTICATED),
    ...readErrors(),
    404: notFound(),
    414: urlTooLongResponse(),
  },
};

const cancelSchema = {
  ...common,
  operationId: 'cancelImport',
  summary: 'Cancel a file import',
  description:
    'Stops a file import that is `queued` or `running`: it reads `cancelled` from the answer on, no chunk starts after it, and what is still waiting to be written is deleted. The chunks already written stay, with their counts. A chunk being written when the request arrives is let finish first (the answer waits for it). An import that had ended, and a bulk request\'s import (`source: request`, written all at once), are answered as they are, unchanged. Scope `listings:write`. Counts toward the rate limits.',
  params: ImportIdParamsSchema,
  body: jsonBody(IgnoredBodySchema, { empty: example('An empty object (or no body at all)', {}) }),
  response: {
    200: jsonResponse(ImportSchema, { description: 'The import, as `GET /v1/api/imports/{id}` reads it after the request.', headers: AUTHENTICATED, examples: IMPORT_CANCEL_EXAMPLES }),
    400: errorResponse('The query has a parameter (the route takes none), or a body was sent that is not JSON (the route ignores what a body holds, but reads it). Nothing was cancelled.', IMPORT_CANCEL_BAD_REQUEST_EXAMPLES, AUTHENTICATED),
    ...apiKeyAuthErrors({ scoped: true }),
    404: notFound(),
    414: urlTooLongResponse(),
    // note: the route ignores its body, but one sent is read as on every route: Fastify's bodyLimit (app.ts).
    413: tooLargeResponse(DEFAULT_BODY_LIMIT_BYTES, AUTHENTICATED),
    415: unsupportedMediaTypeResponse(AUTHENTICATED),
    500: internalErrorResponse(AUTHENTICATED),
    503: errorResponse(
      'PostgreSQL or Redis is unavailable, or a chunk of the import held it for more than 5 s. Nothing was cancelled; retry after `Retry-After` seconds.',
      IMPORT_CANCEL_UNAVAILABLE_EXAMPLES,
      [...AUTHENTICATED, 'Retry-After'],
      RetryLaterErrorSchema,
    ),
  },
};

function wantsCsv(request: FastifyRequest): boolean {
  return request.accepts().type(['application/json', 'text/csv']) === 'text/csv';
}

async function sendCsv(reply: FastifyReply, deps: ApiDeps, accountId: string, importId: string) {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="import-${importId.replace(/[^A-Za-z0-9._-]/g, '_')}-errors.csv"`)
    .send(importErrorsCsv(deps.sql, accountId, importId));
}

/**
 * `GET /v1/api/imports`, `/v1/api/imports/{id}` and `/v1/api/imports/{id}/errors`
 * (docs/imports.md): the account's imports, read from their records, never from the queue; and
 * `POST /v1/api/imports/{id}/cancel`, which stops a file import.
 */
export async function importRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const config = { auth: 'api-key' as const, requiredScope: READ_SCOPES };
  const authenticated = apiKeyAuth(deps);

  app.get(IMPORTS_PATH, {
    schema: listSchema,
    config,
    schemaErrorFormatter: refusalsByPart({ querystring: queryRefusal(LIST_MAX, apiErrors.startingAfterUnknown) }),
    onRequest: [authenticated, refuseUnknownQueryParameters(Object.keys(ListQuerySchema.shape))],
  }, async (request) => {
    const { limit, starting_after: startingAfter } = request.query;
    const page = await listImports(deps.sql, authenticatedKey(request).account.id, { limit, ...(startingAfter === undefined ? {} : { startingAfter }) });
    if (!page) throw apiErrors.startingAfterUnknown();
    return { data: page.data.map(importResource), has_more: page.hasMore };
  });

  app.get(`${IMPORTS_PATH}/:id`, {
    schema: getSchema,
    config,
    schemaErrorFormatter: refusalsByPart({ params: idRefusal }),
    onRequest: [authenticated, refuseUnknownQueryParameters([])],
  }, async (request) => {
    const found = await findImport(deps.sql, authenticatedKey(request).account.id, request.params.id);
    if (!found) throw apiErrors.importNotFound();
    return importResource(found);
  });

  app.get(`${IMPORTS_PATH}/:id/errors`, {
    schema: errorsSchema,
    config,
    schemaErrorFormatter: refusalsByPart({ params: idRefusal, querystring: queryRefusal(ERRORS_MAX, apiErrors.startingAfterMalformed) }),
    onRequest: [authenticated, refuseUnknownQueryParameters(Object.keys(ErrorsQuerySchema.shape))],
  }, async (request, reply) => {
    const accountId = authenticatedKey(request).account.id;
    const { id } = request.params;
    const { limit, starting_after: startingAfter } = request.query;
    const page = await listImportErrors(deps.sql, accountId, id, { limit, ...(startingAfter === undefined ? {} : { startingAfter }) });
    if (!page) throw apiErrors.importNotFound();
    if (wantsCsv(request)) return sendCsv(reply, deps, accountId, id);
    return { data: page.data, has_more: page.hasMore };
  });

  app.post(`${IMPORTS_PATH}/:id/cancel`, {
    schema: cancelSchema,
    // note: cancelling changes what gets written, so it needs the scope that writes.
    config: { auth: 'api-key', requiredScope: 'listings:write' },
    schemaErrorFormatter: refusalsByPart({ params: idRefusal }),
    onRequest: [authenticated, refuseUnknownQueryParameters([])],
  }, async (request) => {
    const accountId = authenticatedKey(request).account.id;
    const { id } = request.params;
    // note: an id that is not a file import of the account in progress is left as it is; the
    // answer is then the same read as GET's, 404 included.
    if ((await cancelFileImport(deps.sql, accountId, id)) === 'locked') throw apiErrors.serviceUnavailable();
    const found = await findImport(deps.sql, accountId, id);
    if (!found) throw apiErrors.importNotFound();
    return importResource(found);
  });
}
