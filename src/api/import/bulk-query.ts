import type { onRequestHookHandler } from 'fastify';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * The bulk routes' query string (docs/endpoints.md#dry-run): `dry_run` and nothing else.
 */

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
 * Whether a bulk request asks for a dry run (docs/endpoints.md#dry-run): `?dry_run=true` or
 * `false`, once; anything else is a 400, never a silent real import. A dry run with an
 * Idempotency-Key is refused: nothing it does is recorded, so nothing could be replayed.
 */
export function parseDryRun(query: unknown, idempotencyKey: string | string[] | undefined): boolean {
  const value = typeof query === 'object' && query !== null ? (query as Record<string, unknown>)['dry_run'] : undefined;
  if (value === undefined || value === 'false') return false;
  if (value !== 'true') throw apiErrors.dryRunMalformed();
  if (idempotencyKey !== undefined) throw apiErrors.dryRunWithIdempotencyKey();
  return true;
}
