import type { FastifyInstance, FastifyRequest } from 'fastify';
import { markImportStep } from '../../shared/import/import-steps.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes of the bodies of `jsonBodyAsBytes` routes, until their handler takes them. */
const rawBodies = new WeakMap<FastifyRequest, Buffer>();
/** The requests whose body was taken: a second take is a mistake of the code, not of the client. */
const takenBodies = new WeakSet<FastifyRequest>();

/**
 * The JSON body of a `jsonBodyAsBytes` route as its bytes, handed over once: the request keeps
 * nothing of it afterwards (a bulk body is up to 2 MB and its import may run for seconds). A
 * request sent without a body (no Content-Type, nothing to parse) has none: empty bytes, which the
 * readers refuse as they refuse an empty JSON body (400 `Invalid JSON body`), not a 500.
 */
export function takeRawBody(request: FastifyRequest): Buffer {
  if (!request.routeOptions.config.jsonBodyAsBytes || takenBodies.has(request)) {
    throw new Error(`${request.routeOptions.url ?? request.url}: the body was not read as bytes, or was taken already`);
  }
  takenBodies.add(request);
  const bytes = rawBodies.get(request);
  rawBodies.delete(request);
  return bytes ?? Buffer.alloc(0);
}

/**
 * The API reads JSON only (any other Content-Type is a 415). JSON bodies are read as bytes, decoded as strict UTF-8 (RFC 8259 8.1: malformed bytes are a
 * 400, not silently replaced by U+FFFD), then parsed by Fastify's own parser with its
 * prototype-poisoning guards. The bulk routes take the bytes as they are and read them the same way
 * in prepareImport, which also hashes them for the Idempotency-Key (hashing bytes cannot fail on
 * a deeply nested document as re-serialising could).
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJsonText = app.getDefaultJsonParser('error', 'error');
  // note: only JSON is accepted; text/plain would otherwise reach the handlers as a string.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    markImportStep(request.id, 'api.body-read');
    const bytes = body as Buffer;
    // note: the bulk routes read their body with the same rules, on a thread (ImportPreparer).
    if (request.routeOptions.config.jsonBodyAsBytes) {
      rawBodies.set(request, bytes);
      done(null, undefined);
      return;
    }
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      done(apiErrors.invalidJson(), undefined);
      return;
    }
    void parseJsonText(request, text, done);
  });
}
