import { z } from 'zod';

/**
 * The body of a route that reads none of it (cancel, key revoke): optional, any JSON. note: a body
 * sent as `application/json` is still parsed, as on every route, so it must be JSON within the
 * app's body limit (else 400 `invalid_json`, 413, or 415 for another media type); what it holds
 * is never looked at. Declared so that the document admits `{}`, which clients and tools send by
 * habit and the service answers as if nothing were sent.
 */
export const IgnoredBodySchema = z.unknown().meta({
  description: 'Optional and ignored: leave it out, or send any JSON (`{}`, say). Sent, it must be `application/json`, JSON, and within the body limit.',
});
