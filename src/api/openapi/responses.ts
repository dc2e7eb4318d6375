import { z } from 'zod';
import {
  ERROR_CODE_DESCRIPTION,
  ErrorBodySchema,
  RequestIdErrorSchema,
  RetryLaterErrorSchema,
  TierErrorSchema,
  TooLargeErrorSchema,
} from '../../shared/api-schemas/error-body.js';
import { RATE_LIMIT_HEADER_NAMES, type ResponseHeaderName } from '../../shared/api-schemas/headers.js';
import { OPEN_ENUM } from '../../shared/rows/open-enum.js';
import { ERROR_EXAMPLES, example, tooLargeExample } from './examples.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { jsonResponse, type Examples, type JsonResponse } from './route-schema.js';

/**
 * The error responses routes share, with the headers each carries: `X-Request-Id` always; the
 * four `X-RateLimit-*`, `RateLimit-Policy` and `RateLimit` on API-key routes once the key is
 * authenticated (docs/access.md#rate-limits); `Retry-After` whenever waiting is the answer.
 */
export const ALWAYS: readonly ResponseHeaderName[] = ['X-Request-Id'];
export const AUTHENTICATED: readonly ResponseHeaderName[] = [...ALWAYS, ...RATE_LIMIT_HEADER_NAMES];

/** The codes of `examples`' bodies, in order, each once; every error example must carry one. */
function codesOf(examples: Examples): string[] {
  const codes = Object.entries(examples).map(([name, { value }]) => {
    const code = (value as { code?: unknown }).code;
    if (typeof code !== 'string') throw new Error(`error example ${name}: its body has no code`);
    return code;
  });
  return [...new Set(codes)];
}

/**
 * An error status of a route: `schema` (a shape of error-body.ts), its `code` listing the codes of
 * `examples`. note: the examples show every answer the status gives (the tests hold each sent
 * error to its status's examples), so they are the list of its codes: a generated client gets
 * them per response to switch on. The list is open (open-enum.ts): a code added later is still a
 * valid answer of the status. The document says `allOf` the shape's component and the list, so
 * the components keep their names.
 */
export function errorResponse(
  description: string,
  examples: Examples,
  headers: readonly ResponseHeaderName[] = ALWAYS,
  schema: z.ZodType = ErrorBodySchema,
  sometimes: readonly ResponseHeaderName[] = [],
): JsonResponse {
  // note: the list says nothing of the other fields: the shape's component closes the body.
  // `additionalProperties: false` (zod's default) would refuse the shape's `error` beside it, and
  // `true` becomes an index signature in a generated client, whose union over the statuses then
  // loses the shape's own fields (a 400's row `errors`, issue 44); so it is left out.
  const codes = z.object({ code: z.string().meta({ description: ERROR_CODE_DESCRIPTION, enum: codesOf(examples), [OPEN_ENUM]: true }) }).meta({ additionalProperties: undefined });
  return { ...jsonResponse(z.intersection(schema, codes), { description, headers, sometimes, examples }), errorShape: schema };
}

const { apiKeyMissing, apiKeyInvalid, apiKeyExpired, ipNotAllowed, sessionMissing, sessionInvalid, tier, origin, rateMinute, rateDay, lockout } = ERROR_EXAMPLES;

/**
 * 401, 402, 403, 429 of an API-key route (docs/access.md#order-of-checks); `scoped` adds the
 * scope's 403, whose example names `scope` (`listings_write` by default).
 */
export function apiKeyAuthErrors(options: { scoped: boolean; scope?: string }) {
  const scope = options.scope === undefined ? ERROR_EXAMPLES.scope : example('The key lacks the scope', apiErrors.scopeMissing(options.scope).body);
  return {
    401: errorResponse('The key is missing, malformed, unknown, revoked or expired (`api_key_expired`). Counts toward the IP lockout.', { apiKeyMissing, apiKeyInvalid, apiKeyExpired }),
    402: errorResponse('The account is not on an Enterprise or Global subscription.', { tier }, ALWAYS, TierErrorSchema),
    // note: a key refused for its client address spends no quota and carries no rate-limit
    // headers (docs/access.md#allowed-addresses); the scope's 403 carries them.
    403: options.scoped
      ? errorResponse(
          'The key lacks the required scope (named in underscore form), the key does not work from this client address (`ip_not_allowed`, counts toward the IP lockout, spends no quota), or a browser sent an Origin that is not allowed.',
          { scope, ipNotAllowed, origin },
          AUTHENTICATED,
          ErrorBodySchema,
          RATE_LIMIT_HEADER_NAMES,
        )
      : errorResponse('The key does not work from this client address (`ip_not_allowed`, counts toward the IP lockout, spends no quota), or a browser sent an Origin that is not allowed.', { ipNotAllowed, origin }),
    429: errorResponse(
      'The account\'s per-minute or per-day limit is reached (all its keys share them), or this IP is locked out after 20 failed authentications in 5 minutes. Nothing was done; retry after `Retry-After` seconds.',
      { rateMinute, rateDay, lockout },
      [...AUTHENTICATED, 'Retry-After'],
      RetryLaterErrorSchema,
    ),
  };
}

/** 401, 402, 403 of a key-management route (session token, docs/access.md#session-tokens). */
export function sessionAuthErrors() {
  return {
    401: errorResponse('The session token is missing, malformed, badly signed, expired or of an unknown account. Counts toward the IP lockout.', {
      sessionMissing,
      sessionInvalid,
    }),
    402: errorResponse('The account is not on an Enterprise or Global subscription.', { tier }, ALWAYS, TierErrorSchema),
    403: errorResponse('A browser sent an Origin that is not allowed.', { origin }),
  };
}

export function lockedOutResponse(): JsonResponse {
  return errorResponse(
    'This IP is locked out after 20 failed authentications in 5 minutes; retry after `Retry-After` seconds.',
    { lockout },
    [...ALWAYS, 'Retry-After'],
    RetryLaterErrorSchema,
  );
}

export function tooLargeResponse(limitBytes: number, headers: readonly ResponseHeaderName[] = ALWAYS): JsonResponse {
  return errorResponse('The body is over the endpoint\'s limit; nothing was read or written.', { tooLarge: tooLargeExample(limitBytes) }, headers, TooLargeErrorSchema);
}

/**
 * 414 of a route with a path parameter: the router refuses a parameter over its length (Fastify's
 * maxParamLength, 100) before the route, or its hooks, run (framework-errors.ts), so only
 * `X-Request-Id` is sent.
 */
export function urlTooLongResponse(): JsonResponse {
  return errorResponse('A path parameter is over 100 characters: refused before the route is reached, whatever else the request holds.', { urlTooLong: ERROR_EXAMPLES.urlTooLong });
}

export function unsupportedMediaTypeResponse(headers: readonly ResponseHeaderName[] = ALWAYS): JsonResponse {
  return errorResponse('The body is not sent as `application/json`.', { unsupportedMediaType: ERROR_EXAMPLES.unsupportedMediaType }, headers);
}

export function unavailableResponse(headers: readonly ResponseHeaderName[] = ALWAYS): JsonResponse {
  return errorResponse('A dependency (PostgreSQL or Redis) is unavailable. Nothing was written; retry after `Retry-After` seconds.', {
    storeUnavailable: ERROR_EXAMPLES.storeUnavailable,
  }, [...headers, 'Retry-After'], RetryLaterErrorSchema);
}

export function internalErrorResponse(headers: readonly ResponseHeaderName[] = ALWAYS): JsonResponse {
  return errorResponse('An unexpected failure. A GET is safe to retry; after a bulk import, retry with the same `Idempotency-Key` (or check what was created).', {
    internal: ERROR_EXAMPLES.internal,
  }, headers, RequestIdErrorSchema);
}
