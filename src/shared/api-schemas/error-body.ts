import { z } from 'zod';
import { ImportResultSchema } from '../import/import-job.js';
import { ImportIdSchema } from './import-id.js';
import { API_ERROR_CODES } from '../errors/api-errors.js';
import { OPEN_CODE_NOTE, OPEN_ENUM } from '../rows/open-enum.js';

/**
 * The error responses: `{error: "<text>", code: "<code>", ...fields}` (docs/errors.md#shape), one
 * schema per shape, so that a client generated from the document can tell a 402 by its
 * `upgrade_url` or a 400 by its `received`. Each status of each route answers with one of these,
 * narrowed there to the codes that status can carry (openapi/responses.ts, errorResponse).
 *
 * note: responses are serialized through these schemas: a field a body carries must be here, and
 * a field required here must be in every body of the statuses that use the schema.
 */
const errorText = z.string().meta({ description: 'What went wrong, in words meant for a person.' });

/**
 * note: typed as a string, listed as an open enum (open-enum.ts): the document lists the codes of
 * the catalogue (and each response the codes it can carry) for clients to switch on, and admits
 * any other string, since codes may be added; the serializer never turns an error into a 500
 * over its code.
 */
export const ERROR_CODE_DESCRIPTION = `What went wrong, for a program: a stable snake_case code. A code never changes meaning once published; the codes listed are those known today. ${OPEN_CODE_NOTE}`;
const errorCode = z.string().meta({ description: ERROR_CODE_DESCRIPTION, enum: [...API_ERROR_CODES], [OPEN_ENUM]: true });
const retryAfterSec = z.number().int().nonnegative().meta({
  description: 'Seconds to wait before retrying; the same value as the `Retry-After` header.',
});
const requestId = z.string().meta({ description: 'The request\'s id (also in `X-Request-Id`); quote it when asking for help.' });

export const ErrorBodySchema = z.object({ error: errorText, code: errorCode }).meta({ id: 'Error', description: 'An error: what went wrong.' });

export const BulkRequestErrorSchema = z
  .object({
    error: errorText,
    code: errorCode,
    errors: ImportResultSchema.shape.errors.optional().meta({
      description: '`no valid rows`: the reason of every row, by its index in the request array.',
    }),
    received: z.number().int().nonnegative().optional().meta({ description: '`Too many rows`: the number of rows sent.' }),
  })
  .meta({ id: 'BulkRequestError', description: 'A bulk request refused as a whole; nothing was written.' });

export const TierErrorSchema = z
  .object({
    error: errorText,
    code: errorCode,
    current_tier: z.string().meta({ description: 'The account\'s subscription tier.' }),
    upgrade_url: z.string().meta({ description: 'Where the subscription can be upgraded.' }),
  })
  .meta({ id: 'TierError', description: 'The account is not on a subscription with API access.' });

export const TooLargeErrorSchema = z
  .object({
    error: errorText,
    code: errorCode,
    limit_bytes: z.number().int().nonnegative().meta({ description: 'The endpoint\'s body limit in bytes.' }),
  })
  .meta({ id: 'TooLargeError', description: 'The body is over the endpoint\'s limit.' });

const importId = ImportIdSchema.optional().meta({
  description: 'An import that was recorded: read it at `Location` (`GET /v1/api/imports/{id}`).',
});

export const RetryLaterErrorSchema = z
  .object({ error: errorText, code: errorCode, retry_after_sec: retryAfterSec, import_id: importId })
  .meta({ id: 'RetryLaterError', description: 'Nothing was done; retry after `retry_after_sec` seconds.' });

/** A 429 that is either a wait (lockout) or a refusal to wait out (the active-key cap). */
export const MaybeRetryLaterErrorSchema = z
  .object({ error: errorText, code: errorCode, retry_after_sec: retryAfterSec.optional() })
  .meta({ id: 'MaybeRetryLaterError', description: 'Refused; when `retry_after_sec` is given, retry after that many seconds.' });

export const RequestIdErrorSchema = z
  .object({ error: errorText, code: errorCode, request_id: requestId, import_id: importId })
  .meta({ id: 'RequestIdError', description: 'The request\'s outcome is unexpected or not known yet; `request_id` identifies it.' });
