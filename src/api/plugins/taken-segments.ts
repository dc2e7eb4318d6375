import type { FastifyContextConfig, FastifyRequest } from 'fastify';

/**
 * Whether the request's path parameter holds a segment its route leaves to another route
 * (FastifyContextConfig.takenSegments): `GET /v1/api/listings/bulk` matches the row route's
 * `/:id`, but its path is the bulk route's, which the lockout guard and the 405 answer treat so.
 * `config` is the route's, for a caller that has read it already (each read of `routeOptions`
 * builds a new object).
 */
export function onTakenSegment(request: FastifyRequest, config: FastifyContextConfig = request.routeOptions.config): boolean {
  const taken = config.takenSegments;
  return taken !== undefined && Object.values(request.params as Record<string, string>).some((value) => taken.includes(value));
}
