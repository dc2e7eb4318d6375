import type { FastifyError, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
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
