import type { FastifyError, FastifySchemaCompiler, FastifySchemaValidationError, onRequestHookHandler } from 'fastify';
import { z } from 'zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { ApiError } from '../shared/errors/api-error.js';
import { apiErrors } from '../shared/errors/api-errors.js';

/**
 * Route schemas are validated by the framework through the zod type provider, so that a rule is
 * written once (the schema the document shows) and the handler gets typed, checked input.
 */

/**
 * The zod validator for every part but the body. For the bulk routes, whose rows are checked one
 * by one by the import's own checks (a failing row is skipped and reported, not fatal); the
 * document still shows the body's schema.
 */
export const validateAllButBody: FastifySchemaCompiler<unknown> = ({ schema, ...route }) => {
  if (route.httpPart === 'body') return () => true;
  if (!(schema instanceof z.ZodType)) throw new Error(`${route.method} ${route.url}: the ${route.httpPart ?? 'request'} schema is not a zod schema`);
  return validatorCompiler({ ...route, schema });
};

/** `body`, `headers`, `params` or `querystring` */
type RequestPart = NonNullable<FastifyError['validationContext']>;

type RefusalOf = (errors: readonly FastifySchemaValidationError[]) => ApiError;

/**
 * A route's `schemaErrorFormatter`: the error-catalogue answer for a request part that failed
 * its schema; a part without its own answer gets 400 `Bad request`. The ApiError it returns is
 * what the error handler sends.
 */
export function refusalsByPart(byPart: Partial<Record<RequestPart, RefusalOf>>) {
  return (errors: FastifySchemaValidationError[], part: RequestPart): Error => byPart[part]?.(errors) ?? apiErrors.badRequest();
}

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
 * Refuses a request that carries a query parameter other than `known`: 400 `Unknown query
 * parameter: <name>`, the first one sent. note: a misspelt dry run (`?dryRun=true`) would
 * otherwise be a real import, a misspelt `limit` a silent default. A hook of the API-key routes
 * after their limits, so it counts against the rate limits as the other 400s do, and before the
 * body is read. The names Fastify's parser produced are checked too, so that no spelling the two
 * read differently reaches the handler.
 */
export function refuseUnknownQueryParameters(known: readonly string[]): onRequestHookHandler {
  const isUnknown = (name: string) => !known.includes(name);
  return function refuseUnknownQueryParameters(request, _reply, done) {
    const unknown = queryParameterNames(request.url).find(isUnknown) ?? Object.keys(request.query as object).find(isUnknown);
    done(unknown === undefined ? undefined : apiErrors.unknownQueryParameter(unknown));
  };
}
