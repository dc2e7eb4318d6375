import { apiErrors } from '../../shared/errors/api-errors.js';
import { ERROR_EXAMPLES, example } from './examples.js';
import { errorResponse } from './responses.js';
import { isJsonResponse, type Examples, type JsonResponse } from './route-schema.js';

const { badRequest } = ERROR_EXAMPLES;
const malformedUrl = example('A path parameter that is not valid percent-encoding', apiErrors.malformedUrl().body, 'Answered by the router before the route is reached.');
const requestTimeout = example('The request did not arrive in time', apiErrors.requestTimeout().body);
const headersTooLarge = example('Headers over the server\'s limit', apiErrors.headersTooLarge().body);

/** A status any request can get before its route runs: its codes by example, its description, and the sentence a route's own description of it gets. */
interface Refusal {
  examples: Examples;
  description: string;
  sentence: string;
}

/** The refusals of a route at `url` (Fastify's form: `/v1/api/imports/:id`), by status. */
function refusalsOf(url: string): Record<number, Refusal> {
  const parameter = url.includes('/:');
  return {
    400: {
      examples: parameter ? { badRequest, malformedUrl } : { badRequest },
      description: 'A request the HTTP parser cannot read (a NUL in a header value, a Content-Length that does not match the body): refused before the route is reached; the connection is closed.',
      sentence: `Before the route is reached: a request the HTTP parser cannot read (\`bad_request\`)${parameter ? ', or a path parameter that is not valid percent-encoding (`malformed_url`)' : ''}.`,
    },
    408: {
      examples: { requestTimeout },
      description: 'The request (its headers or its body) did not all arrive within the server\'s time (`REQUEST_TIMEOUT_MS`; a file, `FILE_UPLOAD_TIMEOUT_MS`). Nothing was written; the connection is closed.',
      sentence: 'Or the request did not all arrive in time (`request_timeout`).',
    },
    431: {
      examples: { headersTooLarge },
      description: 'The request\'s headers are over the server\'s limit: refused before the route is reached; the connection is closed.',
      sentence: 'Or the request\'s headers are over the server\'s limit (`headers_too_large`).',
    },
  };
}

/** `response` (a status built by errorResponse) listing the codes of `more` beside its own, each once. */
function withCodes(response: JsonResponse, more: Examples, sentence: string): JsonResponse {
  const own = response.content['application/json'].examples;
  const codeOf = (value: unknown) => (value as { code?: unknown }).code;
  const ownCodes = new Set(Object.values(own).map(({ value }) => codeOf(value)));
  const added = Object.fromEntries(Object.entries(more).filter(([, { value }]) => !ownCodes.has(codeOf(value))));
  if (Object.keys(added).length === 0) return response;
  if (response.errorShape === undefined) throw new Error('an error status not built by errorResponse: the codes refused before the route cannot be added to it');
  return errorResponse(`${response.description} ${sentence}`, { ...own, ...added }, response.headers, response.errorShape, response.sometimes);
}

/**
 * The answers any operation can get before its route runs (framework-errors.ts,
 * docs/errors.md#framework-errors), added to a documented route's responses: Node's HTTP parser
 * refuses a request it cannot read (400 `bad_request`: a NUL in a header value, a broken
 * Content-Length), whose headers are over its limit (431) or that did not arrive in time (408),
 * whatever its path; the router refuses a path parameter that is not valid percent-encoding (400
 * `malformed_url`). Each is `{error, code}` with `X-Request-Id` alone.
 * note: one rule for every route, so that a route added later is documented with them as well;
 * 414 (a parameter over the router's length) is declared by the routes that have one.
 */
export function withRefusalsBeforeRoute(url: string, responses: Record<string, unknown>): Record<string, unknown> {
  const all = { ...responses };
  for (const [status, { examples, description, sentence }] of Object.entries(refusalsOf(url))) {
    const declared = all[status];
    if (declared !== undefined && !isJsonResponse(declared)) throw new Error(`${url}: its ${status} is not a JSON response: the codes refused before the route cannot be added to it`);
    all[status] = declared === undefined ? errorResponse(description, examples) : withCodes(declared, examples, sentence);
  }
  return all;
}
