import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { IdempotencyHeadersSchema } from '../../shared/api-schemas/headers.js';
import { ImportSchema } from '../../shared/api-schemas/imports.js';
import { API_ERRORS, apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import { IMPORTS_PATH, importLocation } from '../../shared/import-location.js';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import { clientIp } from '../client-ip.js';
import { UploadAbortedError, type FileFormat } from '../import/file-upload.js';
import { atFileImportCap, uploadFileImport, type FileUploadDeps } from '../import/file-upload-steps.js';
import { addJobAfterUpload } from '../import/file-import-job.js';
import { takeUploadSlot } from '../limits/file-upload-slots.js';
import { shedWhenOverloaded } from '../plugins/load-shedding.js';
import { importResource } from '../import/import-resource.js';
import { refusalsByPart, refuseUnknownQueryParameters, validateAllButBody } from '../route-validation.js';
import { BulkRequestErrorSchema, RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { ERROR_EXAMPLES, example } from '../openapi/examples.js';
import {
  FILE_BODY_EXAMPLES,
  FILE_IMPORT_ACCEPTED_EXAMPLES,
  FILE_IMPORT_BAD_REQUEST_EXAMPLES,
  FILE_IMPORT_TOO_MANY_EXAMPLES,
  FILE_MEDIA_TYPE_EXAMPLES,
} from '../openapi/file-import-examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, errorResponse, internalErrorResponse, tooLargeResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';
import { UpdateParameterSchema } from '../import/bulk-query.js';
import { MIRROR_QUERY_REFUSALS, MirrorQueryShape, mirrorOf } from '../import/mirror-query.js';

/** The media types of a whole file, and the format each one is read as. */
const FILE_FORMATS: Record<string, FileFormat> = { 'application/x-ndjson': 'ndjson', 'text/csv': 'csv' };

const FileImportQuerySchema = z.object({
  kind: z.enum(IMPORT_KIND_NAMES as ['machines', 'listings'], { error: API_ERRORS.importKindMalformed.text }).meta({ description: 'What the file holds: `listings` or `machines`.' }),
  update: UpdateParameterSchema,
  ...MirrorQueryShape,
});

/** The answer to a query the schema refused: the first parameter it names. */
const fileQueryRefusal = (errors: readonly { instancePath: string }[]) => {
  const refusal = { '/update': apiErrors.updateMalformed, ...MIRROR_QUERY_REFUSALS }[errors[0]?.instancePath ?? ''];
  return refusal === undefined ? apiErrors.importKindMalformed() : refusal();
};

/** The bodies of file imports, as streams, until their handler takes them. */
const fileBodies = new WeakMap<FastifyRequest, IncomingMessage>();

function takeFileBody(request: FastifyRequest): IncomingMessage {
  const body = fileBodies.get(request);
  if (body === undefined) throw new Error(`${request.url}: the file was not read as a stream`);
  fileBodies.delete(request);
  return body;
}

const formatOf = (request: FastifyRequest): FileFormat | undefined =>
  FILE_FORMATS[(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()];

/** 415 for a body that is neither NDJSON nor CSV, before it is read. */
const refuseOtherMediaTypes: onRequestAsyncHookHandler = async (request) => {
  if (formatOf(request) === undefined) throw apiErrors.fileMediaType();
};

/**
 * 413 for a declared length over the limit and 429 for an account already at its file imports
 * (unless its Idempotency-Key names an earlier upload, which it may replay), before the body is
 * read. note: the cap is checked again, under the account's lock, as the upload begins and as it
 * is accepted (file-upload-steps.ts): uploads that pass here at once cannot all be kept.
 */
function refuseBeforeReading(deps: ApiDeps): onRequestAsyncHookHandler {
  return async (request) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > deps.config.fileImportMaxBytes) throw apiErrors.bodyTooLarge(deps.config.fileImportMaxBytes);
    const idempotencyKey = request.headers['idempotency-key'];
    const accountId = authenticatedKey(request).account.id;
    if (await atFileImportCap(deps.uploadSql, deps.config, { accountId, replayKey: typeof idempotencyKey === 'string' ? idempotencyKey : undefined })) {
      deps.metrics.rateLimited.inc({ window: 'file-imports' });
      throw apiErrors.tooManyFileImports();
    }
  };
}

const { rateMinute, lockout, idempotencyConflict, storeUnavailable, overloaded, importOutcomeUnknown } = ERROR_EXAMPLES;

const schema = (maxBytes: number) => ({
  operationId: 'importFile',
  summary: 'Import a whole file in the background',
  description:
    'The file is the body: NDJSON (`application/x-ndjson`, one row object per line) or CSV (`text/csv`, a header line of field names; array cells separated by `|`), up to 1,000,000 rows, arriving within 10 minutes (the operator\'s `FILE_UPLOAD_TIMEOUT_MS`; 408 `Request timeout` beyond, and nothing is kept). Every row is checked as it arrives with the bulk endpoints\' rules; once the whole file is stored, 202 with the import, which workers then write a chunk at a time (`GET /v1/api/imports/{id}` shows `rows.processed` grow). Scope `listings:write`; charged to the day quota as the bulk requests it replaces.',
  tags: ['Imports'],
  security: [{ apiKey: [] }],
  headers: IdempotencyHeadersSchema,
  querystring: FileImportQuerySchema,
  consumes: Object.keys(FILE_FORMATS),
  // note: documentation only: the route reads the body as a stream (fileBodies), and its
  // validator leaves the body alone (validateAllButBody).
  body: z.string().meta({ 'x-examples': { ndjson: example('NDJSON, a row a line', FILE_BODY_EXAMPLES.ndjson), csv: example('CSV with a header line', FILE_BODY_EXAMPLES.csv) } }),
  response: {
    202: jsonResponse(FileImportAcceptedSchema, {
      description: 'The whole file is stored; the workers write it next. `Location` names the import.',
      headers: [...AUTHENTICATED, 'Location', 'Idempotent-Replayed'],
      examples: FILE_IMPORT_ACCEPTED_EXAMPLES,
    }),
    400: errorResponse(
      'Nothing was kept: `kind` is not `listings` or `machines`, `update` not `replace` or `merge`, `mode` not `upsert` or `mirror`, `missing` not `archive` or `delete`, `max_removal` not a whole number from 0 to 100, or `missing` or `max_removal` is sent without `mode=mirror`; the file is empty, not UTF-8, unreadable as its format, holds more than 1,000,000 rows or no valid row; the `Idempotency-Key` is malformed; or the query has another parameter.',
      FILE_IMPORT_BAD_REQUEST_EXAMPLES,
      AUTHENTICATED,
      BulkRequestErrorSchema,
    ),
    ...apiKeyAuthErrors({ scoped: true }),
    413: tooLargeResponse(maxBytes, AUTHENTICATED),
    415: errorResponse('The body is neither `application/x-ndjson` nor `text/csv`.', FILE_MEDIA_TYPE_EXAMPLES, AUTHENTICATED),
    422: errorResponse('The `Idempotency-Key` was used before with another file (or another endpoint). Nothing was kept.', { idempotencyConflict }, AUTHENTICATED),
    429: errorResponse(
      'The account already has `ACCOUNT_MAX_FILE_IMPORTS` file imports queued or running (2 by default), the day quota cannot take the file (charged as the bulk requests it replaces), the per-minute limit is reached, or this IP is locked out. Nothing was kept; retry after `Retry-After` seconds.',
      { ...FILE_IMPORT_TOO_MANY_EXAMPLES, rateMinute, lockout },
      [...AUTHENTICATED, 'Retry-After'],
      RetryLaterErrorSchema,
    ),
    500: internalErrorResponse(AUTHENTICATED),
    503: errorResponse(
      'Retry after `Retry-After` seconds, with the same `Idempotency-Key`. `Service overloaded, retry shortly`: this API process is overloaded or already receives `FILE_UPLOADS_PER_PROCESS` uploads (decided before the body is read; nothing was kept). `Service temporarily unavailable`: PostgreSQL or Redis is unavailable; nothing was kept. `Import may have been accepted; look it up before sending it again`: the database\'s answer to the commit that accepts the file was lost, so the file may be kept: `Location` names the import (404 there: it was not kept).',
      { storeUnavailable, overloaded, importOutcomeUnknown },
      [...AUTHENTICATED, 'Retry-After', 'Location'],
      RetryLaterErrorSchema,
      // note: only the answer whose import may have been kept
      ['Location'],
    ),
  },
});

/** The 202's body: the import, as `GET /v1/api/imports/{id}` reads it. */
const FileImportAcceptedSchema = z.object({ import: ImportSchema }).meta({ id: 'FileImportAccepted', description: 'The import the file became.' });

/**
 * `POST /v1/api/imports?kind=listings|machines` (docs/imports.md#whole-files): a whole file, read
 * as a stream, checked and staged in PostgreSQL a batch at a time, and kept only once it is whole
 * (src/api/import/file-upload-steps.ts); then its job in the `file-imports` queue, which the
 * workers run a chunk at a time (src/worker/file-imports.ts).
 */
export async function fileImportRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addContentTypeParser(Object.keys(FILE_FORMATS), (request, payload, done) => {
    fileBodies.set(request, payload);
    done(null, undefined);
  });
  const uploadDeps: FileUploadDeps = {
    uploadSql: deps.uploadSql,
    sql: deps.sql,
    quota: deps.quota,
    config: deps.config,
    uploads: deps.uploads,
    refused: (window) => deps.metrics.rateLimited.inc({ window }),
  };

  app.post(
    IMPORTS_PATH,
    {
      schema: schema(deps.config.fileImportMaxBytes),
      bodyLimit: deps.config.fileImportMaxBytes,
      config: { auth: 'api-key', requiredScope: 'listings:write' },
      validatorCompiler: validateAllButBody,
      schemaErrorFormatter: refusalsByPart({ querystring: fileQueryRefusal, headers: apiErrors.idempotencyKeyMalformed }),
      onRequest: [
        apiKeyAuth(deps),
        refuseUnknownQueryParameters(Object.keys(FileImportQuerySchema.shape)),
        refuseOtherMediaTypes,
        refuseBeforeReading(deps),
        shedWhenOverloaded(fastify),
        takeUploadSlot(deps.uploadSlots),
      ],
    },
    async (request, reply) => {
      const { account, keyId } = authenticatedKey(request);
      const kind: ImportKind = request.query.kind;
      // note: before the file is taken: a refused query leaves its body unread
      const mirror = mirrorOf(request.query);
      const outcome = await uploadFileImport(uploadDeps, {
        account,
        keyId,
        clientIp: clientIp(request),
        kind,
        update: request.query.update ?? 'replace',
        mirror,
        format: formatOf(request)!,
        body: takeFileBody(request),
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
        log: request.log,
      }).catch((error: unknown) => {
        // note: answered already (408 past FILE_UPLOAD_TIMEOUT_MS, or the client gone): the upload
        // was dropped, and there is nobody left to tell.
        if (reply.sent || error instanceof UploadAbortedError) return undefined;
        throw error;
      });
      if (outcome === undefined) return reply;
      const created = outcome.import;
      if (outcome.type === 'replayed') {
        return reply.code(202).header('location', importLocation(created.id)).header('idempotent-replayed', 'true').send({ import: importResource(created) });
      }
      await addJobAfterUpload(deps.fileImportQueue, created.id, kind, request.log);
      return reply.code(202).header('location', importLocation(created.id)).send({ import: importResource(created) });
    },
  );
}
