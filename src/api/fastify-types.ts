import type { Account } from '../shared/repositories/accounts.js';
import type { AuthenticatedKey } from '../shared/repositories/api-keys.js';
import type { Scope } from '../shared/scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** set by the API-key hook */
    apiKey?: AuthenticatedKey;
    /** set by the session-token hook */
    sessionAccount?: Account;
    /** the JSON body's bytes as received */
    rawBody?: Buffer;
  }
  interface FastifyContextConfig {
    /** the scope an API-key route requires (spec 2.2) */
    requiredScope?: Scope;
    /** how the route authenticates; API-key routes await the lockout check themselves */
    auth?: 'api-key' | 'session';
  }
}
