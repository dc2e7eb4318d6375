import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  CATALOGUE_PAGE_MAX,
  CatalogueListQuerySchema,
  CatalogueRowParamsSchema,
  ListingPageSchema,
  ListingSchema,
  MachinePageSchema,
  MachineSchema,
} from '../../shared/api-schemas/catalogue-rows.js';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { Scope } from '../../shared/access/scopes.js';
import { findCatalogueRow, listCatalogueRows, type CatalogueRecords } from '../../shared/repositories/catalogue-rows.js';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import {
  CATALOGUE_GET_BAD_REQUEST_EXAMPLES,
  CATALOGUE_LIST_BAD_REQUEST_EXAMPLES,
  catalogueNotFoundExamples,
  cataloguePageExamples,
  catalogueRowExamples,
} from '../openapi/catalogue-examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, errorResponse, internalErrorResponse, unavailableResponse, urlTooLongResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';
import { refusalsByPart, refuseUnknownQueryParameters } from '../route-validation.js';

/**
 * Reading rows back needs one of these; a key with neither is told the first
 * (docs/catalogue.md#reading-rows-back): a key that writes the catalogue may read it.
 */
export const READ_SCOPES: readonly [Scope, ...Scope[]] = ['listings:read', 'listings:write'];

/** What differs between the two kinds' routes. */
const KINDS = {
  listings: { one: 'listing', tag: 'Listing', schema: ListingSchema, page: ListingPageSchema, notFound: () => apiErrors.listingNotFound() },
  machines: { one: 'machine', tag: 'Machine', schema: MachineSchema, page: MachinePageSchema, notFound: () => apiErrors.machineNotFound() },
} as const satisfies Record<ImportKind, unknown>;

/** The first failing query parameter's answer, by its name. */
export function queryRefusal(errors: readonly FastifySchemaValidationError[]): ApiError {
  switch (errors[0]?.instancePath) {
    case '/starting_after':
      return apiErrors.rowStartingAfterMalformed();
    case '/external_id':
      return apiErrors.externalIdFilterMalformed();
    case '/updated_since':
      return apiErrors.updatedSinceMalformed();
    case '/archived':
      return apiErrors.archivedMalformed();
    default:
      return apiErrors.pageLimitMalformed(CATALOGUE_PAGE_MAX);
  }
}

/** A row as the API answers it: its times in ISO 8601. */
function rowResource<Row extends CatalogueRecords[ImportKind]>(row: Row) {
  return { ...row, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(), archived_at: row.archived_at?.toISOString() ?? null };
}

function schemas(kind: ImportKind) {
  const { one, schema, page } = KINDS[kind];
  const common = { tags: ['Catalogue'], security: [{ apiKey: [] }] };
  const readErrors = {
    ...apiKeyAuthErrors({ scoped: true, scope: 'listings_read' }),
    500: internalErrorResponse(AUTHENTICATED),
    503: unavailableResponse(AUTHENTICATED),
  };
  const list = {
    ...common,
    operationId: `list${KINDS[kind].tag}s`,
    summary: `The account's ${kind}`,
    description: `Oldest first (creation order), a page at a time (\`limit\`, \`starting_after\`, \`has_more\`): paging through never skips or repeats a ${one} that exists throughout. Active ${kind} by default; \`archived=true\` for the archived ones. Filters: \`external_id\`, \`updated_since\`. Scope \`listings:read\` or \`listings:write\`. Counts toward the rate limits.`,
    querystring: CatalogueListQuerySchema,
    response: {
      200: jsonResponse(page, { description: `A page of ${kind}.`, headers: AUTHENTICATED, examples: cataloguePageExamples(kind) }),
      400: errorResponse(
        `\`limit\` is not a whole number from 1 to ${CATALOGUE_PAGE_MAX}, \`starting_after\` is not a row id (a UUID), \`external_id\` is no id a row can have, \`updated_since\` is not an ISO 8601 date and time with a zone, \`archived\` is neither \`true\` nor \`false\`, or the query has another parameter. The text names the parameter.`,
        CATALOGUE_LIST_BAD_REQUEST_EXAMPLES,
        AUTHENTICATED,
      ),
      ...readErrors,
    },
  };
  const get = {
    ...common,
    operationId: `get${KINDS[kind].tag}`,
    summary: `A ${one}`,
    description: `One ${one} of the account, active or archived, as stored. Scope \`listings:read\` or \`listings:write\`. Counts toward the rate limits.`,
    params: CatalogueRowParamsSchema,
    response: {
      200: jsonResponse(schema, { description: `The ${one}.`, headers: AUTHENTICATED, examples: catalogueRowExamples(kind) }),
      400: errorResponse('The query has a parameter (the route takes none).', CATALOGUE_GET_BAD_REQUEST_EXAMPLES, AUTHENTICATED),
      ...readErrors,
      404: errorResponse(`Not one of the account's ${kind}: unknown, another account's, deleted, or an id no ${one} can have; all answered alike.`, catalogueNotFoundExamples(kind), AUTHENTICATED),
      414: urlTooLongResponse(),
    },
  };
  return { list, get };
}

/**
 * `GET /v1/api/{kind}` and `GET /v1/api/{kind}/{id}` for `kind` (docs/catalogue.md#reading-rows-back):
 * the account's listings or machines, read back as stored.
 */
function catalogueRoutesOf(kind: ImportKind) {
  return async function catalogueRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
    const app = fastify.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'api-key' as const, requiredScope: READ_SCOPES };
    /** the bulk routes' own segments, which are no row's id (`GET /v1/api/listings/bulk` is 405) */
    const takenSegments = ['bulk', 'bulk-archive', 'bulk-delete'];
    const authenticated = apiKeyAuth(deps);
    const { list, get } = schemas(kind);
    const { notFound } = KINDS[kind];

    app.get(`/v1/api/${kind}`, {
      schema: list,
      config,
      schemaErrorFormatter: refusalsByPart({ querystring: queryRefusal }),
      onRequest: [authenticated, refuseUnknownQueryParameters(Object.keys(CatalogueListQuerySchema.shape))],
    }, async (request) => {
      const { limit, starting_after: startingAfter, external_id: externalId, updated_since: updatedSince, archived } = request.query;
      const page = await listCatalogueRows(deps.sql, kind, authenticatedKey(request).account.id, {
        limit,
        archived: archived === 'true',
        ...(startingAfter === undefined ? {} : { startingAfter }),
        ...(externalId === undefined ? {} : { externalId }),
        ...(updatedSince === undefined ? {} : { updatedSince }),
      });
      return { data: page.data.map(rowResource), has_more: page.hasMore };
    });

    app.get(`/v1/api/${kind}/:id`, {
      schema: get,
      config: { ...config, takenSegments },
      // note: an id no row can have is answered as an unknown one, whatever else the request holds.
      schemaErrorFormatter: refusalsByPart({ params: notFound }),
      onRequest: [authenticated, refuseUnknownQueryParameters([])],
    }, async (request) => {
      const found = await findCatalogueRow(deps.sql, kind, authenticatedKey(request).account.id, request.params.id);
      if (!found) throw notFound();
      return rowResource(found);
    });
  };
}

export const listingRoutes = catalogueRoutesOf('listings');
export const machineRoutes = catalogueRoutesOf('machines');
