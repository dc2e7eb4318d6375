import type { FastifyRequest } from 'fastify';
import type { Account } from '../shared/repositories/accounts.js';
import type { AuthenticatedKey } from '../shared/repositories/api-keys.js';

/**
 * What a route's authentication hook established. note: a route reaches its handler only after
 * its hook has set these; a missing one is a route declared without its hook, a bug, never the
 * partner's fault, so it is an internal error rather than a 401.
 */

export function authenticatedKey(request: FastifyRequest): AuthenticatedKey {
  if (request.apiKey === undefined) throw new Error(`${request.routeOptions.url ?? request.url}: no API-key hook ran before the handler`);
  return request.apiKey;
}

export function sessionAccountOf(request: FastifyRequest): Account {
  if (request.sessionAccount === undefined) throw new Error(`${request.routeOptions.url ?? request.url}: no session hook ran before the handler`);
  return request.sessionAccount;
}
