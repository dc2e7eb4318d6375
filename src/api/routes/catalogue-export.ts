import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { CatalogueExportQuerySchema } from '../../shared/api-schemas/catalogue-rows.js';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import { exportBody } from '../export/export-stream.js';
import { CATALOGUE_EXPORT_BAD_REQUEST_EXAMPLES, catalogueExportExamples, TOO_MANY_EXPORTS_EXAMPLE } from '../openapi/catalogue-examples.js';
import { ERROR_EXAMPLES } from '../openapi/examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, errorResponse, internalErrorResponse } from '../openapi/responses.js';
import { streamResponse } from '../openapi/route-schema.js';
import { RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { refusalsByPart, refuseUnknownQueryParameters } from '../route-validation.js';
import { queryRefusal, READ_SCOPES } from './catalogue-rows.js';

const CONTENT_TYPES = { ndjson: 'application/x-ndjson', csv: 'text/csv; charset=utf-8' } as const;

/** The first failing query parameter's answer: the format's own, or the list's for its filters. */
function exportQueryRefusal(errors: readonly FastifySchemaValidationError[]): ApiError {
  return errors[0]?.instancePath === '/format' ? apiErrors.exportFormatMalformed() : queryRefusal(errors);
}

function schema(kind: ImportKind) {
  const examples = catalogueExportExamples(kind);
  const { rateMinute, rateDay, lockout } = ERROR_EXAMPLES;
  return {
    tags: ['Catalogue'],
    security: [{ apiKey: [] }],
    operationId: `export${kind === 'listings' ? 'Listing' : 'Machine'}s`,
    summary: `Every one of the account's ${kind}, in one answer`,
    description: `The account's ${kind} that pass the filters (\`archived\`, \`updated_since\`, as on the list), every field as the list answers it, in id order (creation order), as one consistent snapshot: a row written while the export runs is in it whole or not at all, never twice. NDJSON by default, CSV with \`format=csv\` (cells a spreadsheet would run as a formula start with \`'\`). Streamed, and gzip-compressed when the request sends \`Accept-Encoding: gzip\`. One export per account at a time; a client that reads nothing for \`EXPORT_IDLE_TIMEOUT_MS\` (30 s by default) is dropped, its answer cut short without its last chunk. Scope \`listings:read\` or \`listings:write\`. Counts as one request toward the rate limits.`,
    querystring: CatalogueExportQuerySchema,
    response: {
      200: streamResponse({
        description: `The ${kind}: a JSON object a line (\`application/x-ndjson\`), or with \`format=csv\` a CSV file (\`text/csv\`) with a header line. No row matching: an empty body (NDJSON) or the header alone (CSV).`,
        headers: AUTHENTICATED,
        examples: { 'application/x-ndjson': examples.ndjson, 'text/csv': examples.csv },
      }),
      400: errorResponse(
        '`updated_since` is not an ISO 8601 date and time with a zone, `archived` is neither `true` nor `false`, `format` is neither `ndjson` nor `csv`, or the query has another parameter. The text names the parameter.',
        CATALOGUE_EXPORT_BAD_REQUEST_EXAMPLES,
        AUTHENTICATED,
      ),
      ...apiKeyAuthErrors({ scoped: true, scope: 'listings_read' }),
      429: errorResponse(
        'The account\'s per-minute or per-day limit is reached, an export of the account is already running (`too_many_exports`, on any replica), or this IP is locked out after 20 failed authentications in 5 minutes. Nothing was done; retry after `Retry-After` seconds.',
        { rateMinute, rateDay, tooManyExports: TOO_MANY_EXPORTS_EXAMPLE, lockout },
        [...AUTHENTICATED, 'Retry-After'],
        RetryLaterErrorSchema,
      ),
      500: internalErrorResponse(AUTHENTICATED),
      503: errorResponse(
        'Retry after `Retry-After` seconds. `Service overloaded, retry shortly`: this API process already streams `EXPORT_POOL_MAX` exports (each holds a database connection of the exports\' own pool while it runs). `Service temporarily unavailable`: PostgreSQL or Redis is unavailable.',
        { storeUnavailable: ERROR_EXAMPLES.storeUnavailable, overloaded: ERROR_EXAMPLES.overloaded },
        [...AUTHENTICATED, 'Retry-After'],
        RetryLaterErrorSchema,
      ),
    },
  };
}

/**
 * `GET /v1/api/{kind}/export` (docs/catalogue.md#export): the account's whole catalogue of a kind,
 * streamed. The export's slot is taken after the query is checked, so a refused request holds
 * none, and given back when the answer's connection is done with it.
 */
function catalogueExportRoutesOf(kind: ImportKind) {
  return async function catalogueExportRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
    const app = fastify.withTypeProvider<ZodTypeProvider>();
    app.get(`/v1/api/${kind}/export`, {
      schema: schema(kind),
      config: { auth: 'api-key' as const, requiredScope: READ_SCOPES },
      schemaErrorFormatter: refusalsByPart({ querystring: exportQueryRefusal }),
      onRequest: [apiKeyAuth(deps), refuseUnknownQueryParameters(Object.keys(CatalogueExportQuerySchema.shape))],
    }, async (request, reply) => {
      const accountId = authenticatedKey(request).account.id;
      const slot = await deps.exports.tryAcquire(accountId);
      if (slot === undefined) throw apiErrors.tooManyExports();
      const releaseConnection = deps.exportSlots.tryTake();
      if (releaseConnection === undefined) {
        slot.release();
        request.log.info({ exports: deps.exportSlots.inUse }, 'export shed: the process streams its number of exports');
        throw apiErrors.overloaded();
      }
      reply.raw.once('close', () => slot.release());
      const { format, archived, updated_since: updatedSince } = request.query;
      const gzip = request.accepts().encoding(['gzip', 'identity']) === 'gzip';
      // note: the process's export slot follows the connection, which an export ended early holds
      // until its cancelled COPY is read out and rolled back, after its answer closed
      const { body, ended } = await exportBody(deps.exportSql, {
        kind,
        accountId,
        filters: { archived: archived === 'true', ...(updatedSince === undefined ? {} : { updatedSince }) },
        format,
        gzip,
        idleMs: deps.config.exportIdleTimeoutMs,
      }, request.log).catch((error: unknown) => {
        // note: an export that could not start has ended its transaction already
        releaseConnection();
        throw error;
      });
      void ended.then(releaseConnection);
      reply.type(CONTENT_TYPES[format]).header('vary', 'accept-encoding');
      if (gzip) reply.header('content-encoding', 'gzip');
      if (format === 'csv') reply.header('content-disposition', `attachment; filename="${kind}.csv"`);
      return reply.send(body);
    });
  };
}

export const listingExportRoutes = catalogueExportRoutesOf('listings');
export const machineExportRoutes = catalogueExportRoutesOf('machines');
