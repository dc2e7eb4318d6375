import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { hasApiAccess } from '../../shared/access/tiers.js';
import { IdempotencyHeadersSchema } from '../../shared/api-schemas/headers.js';
import { ImportSchema } from '../../shared/api-schemas/imports.js';
import { API_ERRORS, apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORT_KIND_NAMES, IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import { IMPORTS_PATH, importLocation } from '../../shared/import/import-location.js';
import type { Sql, TransactionSql } from '../../shared/infra/db.js';
import { claimIdempotencyKey } from '../../shared/repositories/idempotency-keys.js';
import { findImport } from '../../shared/repositories/import-lookups.js';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import { FileRefusedError, receiveFile, type FileFormat } from '../import/file-upload.js';
import { addJobAfterUpload } from '../import/file-import-job.js';
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
import { apiKeyAuthErrors, AUTHENTICATED, errorResponse, internalErrorResponse, tooLargeResponse, unavailableResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';

/** The media types of a whole file, and the format each one is read as. */
const FILE_FORMATS: Record<string, FileFormat> = { 'application/x-ndjson': 'ndjson', 'text/csv': 'csv' };

const FileImportQuerySchema = z.object({
  kind: z.enum(IMPORT_KIND_NAMES as ['machines', 'listings'], { error: API_ERRORS.importKindMalformed.text }).meta({ description: 'What the file holds: `listings` or `machines`.' }),
});

/** The bodies of file imports, as streams, until their handler takes them. */
const fileBodies = new WeakMap<FastifyRequest, Readable>();

function takeFileBody(request: FastifyRequest): Readable {
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
 * 413 for a declared length over the limit and 429 for an account already at its file imports,
 * before the body is read. note: the second is checked again, under a lock, before the upload
 * commits: two uploads that pass here at once cannot both be kept over the limit.
 */
function refuseBeforeReading(deps: ApiDeps): onRequestAsyncHookHandler {
  return async (request) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > deps.config.fileImportMaxBytes) throw apiErrors.bodyTooLarge(deps.config.fileImportMaxBytes);
    if ((await unfinishedFileImportsOf(deps.sql, authenticatedKey(request).account.id)) >= deps.config.accountMaxFileImports) {
      deps.metrics.rateLimited.inc({ window: 'file-imports' });
      throw apiErrors.tooManyFileImports();
    }
  };
}

async function unfinishedFileImportsOf(sql: Sql | TransactionSql, accountId: string, except = ''): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from imports
    where account_id = ${accountId} and source = 'file' and state in ('queued', 'running') and job_id <> ${except}`;
  return row!.n;
}

/** An Idempotency-Key that names an earlier upload of the same file: that import is the answer. */
class ReplayedUpload extends Error {
  constructor(readonly importId: string) {
    super('idempotency replay');
  }
}

const { rateMinute, lockout, idempotencyConflict } = ERROR_EXAMPLES;

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
      'Nothing was kept: `kind` is not `listings` or `machines`; the file is empty, not UTF-8, unreadable as its format, holds more than 1,000,000 rows or no valid row; the `Idempotency-Key` is malformed; or the query has another parameter.',
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
    503: unavailableResponse(AUTHENTICATED),
  },
});

/** The 202's body: the import, as `GET /v1/api/imports/{id}` reads it. */
const FileImportAcceptedSchema = z.object({ import: ImportSchema }).meta({ id: 'FileImportAccepted', description: 'The import the file became.' });

/**
 * `POST /v1/api/imports?kind=listings|machines` (docs/imports.md#whole-files): a whole file,
 * read as a stream and staged in PostgreSQL in one transaction with the import's record, so
 * that a refused file, or an API that dies mid-upload, keeps nothing; then its job in the
 * `file-imports` queue, which the workers run a chunk at a time (src/worker/file-imports.ts).
 */
export async function fileImportRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addContentTypeParser(Object.keys(FILE_FORMATS), (request, payload, done) => {
    fileBodies.set(request, payload);
    done(null, undefined);
  });

  app.post(
    IMPORTS_PATH,
    {
      schema: schema(deps.config.fileImportMaxBytes),
      bodyLimit: deps.config.fileImportMaxBytes,
      config: { auth: 'api-key', requiredScope: 'listings:write' },
      validatorCompiler: validateAllButBody,
      schemaErrorFormatter: refusalsByPart({ querystring: apiErrors.importKindMalformed, headers: apiErrors.idempotencyKeyMalformed }),
      onRequest: [apiKeyAuth(deps), refuseUnknownQueryParameters(['kind']), refuseOtherMediaTypes, refuseBeforeReading(deps)],
    },
    async (request, reply) => {
      const { account } = authenticatedKey(request);
      const kind: ImportKind = request.query.kind;
      const format = formatOf(request)!;
      const key = request.headers['idempotency-key'];
      const body = takeFileBody(request);
      const jobId = randomUUID();
      let charged = 0;
      try {
        await deps.sql.begin(async (tx) => {
          await tx`
            insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
            values (${jobId}, ${account.id}, ${kind}, ${request.id}, 0, 0, 0, '[]', 'queued', 'file', now())`;
          const file = await receiveFile(tx, { jobId, kind, format, body, maxBytes: deps.config.fileImportMaxBytes });
          await tx`update imports set received = ${file.received}, skipped = ${file.failed}, processed = ${file.failed} where job_id = ${jobId}`;
          // note: under the account's lock, so that two uploads finishing at once count each other.
          await tx`select pg_advisory_xact_lock(hashtext(${`file-imports:${account.id}`}))`;
          if ((await unfinishedFileImportsOf(tx, account.id, jobId)) >= deps.config.accountMaxFileImports) {
            deps.metrics.rateLimited.inc({ window: 'file-imports' });
            throw new FileRefusedError(apiErrors.tooManyFileImports());
          }
          if (key !== undefined) {
            const claim = await claimIdempotencyKey(tx, { accountId: account.id, key, requestHash: file.hash, jobId });
            if (!claim.claimed && !claim.requestHash.equals(file.hash)) throw new FileRefusedError(apiErrors.idempotencyKeyReused());
            if (!claim.claimed) throw new ReplayedUpload(claim.jobId);
          }
          // note: the request itself counted once in both windows; the file counts as the bulk
          // requests it replaces in the day window. Last, so that a refusal above charges nothing.
          const points = Math.ceil(file.received / IMPORT_KINDS[kind].maxRows) - 1;
          const charge = hasApiAccess(account.subscriptionTier) ? await deps.quota.chargeDay(account.id, account.subscriptionTier, points) : { ok: true as const };
          if (!charge.ok) {
            deps.metrics.rateLimited.inc({ window: 'per-day' });
            throw new FileRefusedError(apiErrors.rateLimited('per-day', charge.retryAfterSec));
          }
          charged = points;
        });
      } catch (error) {
        if (charged > 0) deps.quota.refundDay(account.id, charged);
        if (error instanceof FileRefusedError) throw error.reply;
        if (error instanceof ReplayedUpload) {
          const earlier = await findImport(deps.sql, account.id, error.importId);
          if (!earlier) throw new Error(`the import ${error.importId} an Idempotency-Key names cannot be read`, { cause: error });
          return reply.code(202).header('location', importLocation(earlier.id)).header('idempotent-replayed', 'true').send({ import: importResource(earlier) });
        }
        throw error;
      }
      const created = await findImport(deps.sql, account.id, jobId);
      if (!created) throw new Error(`the file import ${jobId} just committed cannot be read`);
      // note: after the read, so that the 202 shows the import as the upload left it (queued),
      // not as a first chunk a fast worker wrote meanwhile.
      await addJobAfterUpload(deps.fileImportQueue, jobId, kind, request.log);
      return reply.code(202).header('location', importLocation(jobId)).send({ import: importResource(created) });
    },
  );
}
