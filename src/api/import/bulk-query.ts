import type { onRequestHookHandler } from 'fastify';
import { z } from 'zod';
import { API_ERRORS, apiErrors } from '../../shared/errors/api-errors.js';

/**
 * The bulk routes' query string (docs/endpoints.md#dry-run): `dry_run` and nothing else.
 */

const DRY_RUN_DESCRIPTION =
  '`true`: a dry run. Everything an import does, the worker\'s transaction, the table constraints and the `external_id` matching included, then rolled back: the answer is 200 with what the import would have given and `dry_run: true`, and nothing is written. Needs the same key, scope and tier, and counts against the rate limits. Not with an `Idempotency-Key`. Any other value than `true` or `false` is a 400. The only query parameter: any other (`dryRun`, `dry-run`) is a 400 `Unknown query parameter: <name>`, never an import.';

/**
 * The bulk routes' query, validated by the route (a value other than `true` or `false`, or the
 * parameter twice, is 400 `dry_run must be true or false`); a parameter it does not name is
 * refused before (refuseUnknownQueryParameters).
 */
export const BulkQuerySchema = z.object({
  dry_run: z.enum(['true', 'false'], { error: API_ERRORS.dryRunMalformed.text }).optional().meta({ description: DRY_RUN_DESCRIPTION }),
});
export type BulkQuery = z.output<typeof BulkQuerySchema>;

/** A malformed escape is kept as sent, as Fastify's query parser keeps it. */
function decoded(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    return component;
  }
}

/**
 * The parameter names of a request target, in the order sent, read as Fastify's query parser
 * reads them: the query starts after the first `?` or `#`, `+` is a space, an empty pair is
 * skipped, `=value` has an empty name.
 */
export function queryParameterNames(url: string): string[] {
  const start = url.search(/[?#]/);
  if (start === -1) return [];
  return url
    .slice(start + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return decoded((equals === -1 ? pair : pair.slice(0, equals)).replaceAll('+', ' '));
    });
}

/**
 * Refuses a bulk request that carries a query parameter other than `known`: 400 `Unknown query
 * parameter: <name>`, the first one sent. note: a misspelt dry run (`?dryRun=true`) would
 * otherwise be a real import. A hook of the bulk routes after their limits, so it counts against
 * the rate limits as the other 400s do, and before the body is read. The names Fastify's parser
 * produced are checked too, so that no spelling the two read differently reaches the handler.
 */
export function refuseUnknownQueryParameters(known: readonly string[]): onRequestHookHandler {
  const isUnknown = (name: string) => !known.includes(name);
  return function refuseUnknownQueryParameters(request, _reply, done) {
    const unknown = queryParameterNames(request.url).find(isUnknown) ?? Object.keys(request.query as object).find(isUnknown);
    done(unknown === undefined ? undefined : apiErrors.unknownQueryParameter(unknown));
  };
}

/**
 * Whether a bulk request is a dry run (docs/endpoints.md#dry-run). A dry run with an
 * Idempotency-Key is refused: nothing it does is recorded, so nothing could be replayed.
 */
export function isDryRun(query: BulkQuery, idempotencyKey: string | undefined): boolean {
  if (query.dry_run !== 'true') return false;
  if (idempotencyKey !== undefined) throw apiErrors.dryRunWithIdempotencyKey();
  return true;
}
