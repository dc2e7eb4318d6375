import type { Account } from '../shared/repositories/accounts.js';
import type { AuthenticatedKey } from '../shared/repositories/api-keys.js';
import type { Scope } from '../shared/access/scopes.js';
import type { InFlightSlot } from './limits/in-flight-slots.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** set by the API-key hook once the key is identified, before the tier, quota and scope checks */
    apiKey?: AuthenticatedKey;
    /** set by the session-token hook */
    sessionAccount?: Account;
    /** the account's in-flight import slot this request holds (bulk imports) */
    inFlightSlot?: InFlightSlot;
    /** set once the request's completion line is written (request-log.ts): one line per request */
    completionLineWritten?: boolean;
  }
  interface FastifyContextConfig {
    /**
     * the scope an API-key route requires (docs/access.md#scopes), or the scopes of which it
     * requires one: the 403 names the first
     */
    requiredScope?: Scope | readonly [Scope, ...Scope[]];
    /** how the route authenticates; API-key routes await the lockout check themselves */
    auth?: 'api-key' | 'session';
    /** the handler gets the JSON body as its bytes and reads it itself (the bulk routes, off the event loop) */
    jsonBodyAsBytes?: boolean;
    /**
     * values of the route's path parameter that are other routes' own segments: a path with one
     * of them is not this route's (`GET /v1/api/listings/bulk` is the bulk route's path, which
     * takes POST alone: 405, not a row named `bulk`; method-not-allowed.ts)
     */
    takenSegments?: readonly string[];
  }
}
