import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { openapiDocument } from '../openapi/document.js';
import { transformDocument, transformRoute } from '../openapi/transforms.js';

export const OPENAPI_PATH = '/v1/openapi.json';
export const DOCS_PREFIX = '/docs';

// note: the reference is served from the npm package's own files; this policy makes the browser
// refuse anything from elsewhere (no CDN, no online validator), and the page sends no requests
// to the API itself (submitting is off: an API key does not belong in a browser). Swagger UI
// sets one inline style; inline styles cannot load anything that img-src and font-src allow not.
const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

/**
 * zod for the routes' schemas, the OpenAPI 3.1 document built from them at
 * `GET /v1/openapi.json`, and the reference at `/docs`. Registered before the routes, whose
 * registration @fastify/swagger records. All three are public.
 */
export async function registerApiDocs(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(swagger, { openapi: openapiDocument(), transform: transformRoute, transformObject: transformDocument });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    theme: { title: 'Bulk Import API reference' },
    uiConfig: { supportedSubmitMethods: [], deepLinking: true },
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
