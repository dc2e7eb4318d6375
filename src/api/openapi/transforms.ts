import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RESPONSE_HEADERS, type ResponseHeaderName } from '../../shared/api-schemas/headers.js';
import { isJsonResponse } from './route-schema.js';

/** The partner API: every route under it is documented; operator endpoints and /docs are not. */
export const DOCUMENTED_PREFIX = '/v1/';

const zodTransform = createJsonSchemaTransform({});
const zodTransformObject = createJsonSchemaTransformObject({});

function headerSchema(name: ResponseHeaderName): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(RESPONSE_HEADERS[name], { target: 'draft-2020-12', io: 'output' });
  return schema;
}

/**
 * Per route: zod schemas to JSON Schema (fastify-type-provider-zod), then the response headers
 * and examples of each `jsonResponse` carried over, which that transform leaves out.
 */
export const transformRoute: SwaggerTransform = (document) => {
  if (!document.url.startsWith(DOCUMENTED_PREFIX)) return { schema: { hide: true }, url: document.url };
  const result = zodTransform(document);
  const declared = document.schema?.response as Record<string, unknown> | undefined;
  const transformed = (result.schema as { response?: Record<string, { headers?: unknown; content: Record<string, { examples?: unknown }> }> })
    .response;
  if (declared === undefined || transformed === undefined) return result;
  for (const [status, response] of Object.entries(declared)) {
    const target = transformed[status];
    if (!isJsonResponse(response) || target === undefined) continue;
    target.headers = Object.fromEntries(response.headers.map((name) => [name, headerSchema(name)]));
    const media = target.content['application/json'];
    if (media) media.examples = response.content['application/json'].examples;
  }
  return result;
};

type Json = unknown;

const SCHEMA_REF = '#/components/schemas/';

/** Names of the component schemas `root` refers to, directly or through other components. */
function referencedSchemas(root: Json, schemas: Record<string, Json>): Set<string> {
  const found = new Set<string>();
  const visit = (node: Json): void => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith(SCHEMA_REF)) {
        const name = value.slice(SCHEMA_REF.length);
        if (!found.has(name)) {
          found.add(name);
          visit(schemas[name]);
        }
      } else {
        visit(value);
      }
    }
  };
  visit(root);
  return found;
}

const HEADER_REF = '#/components/headers/';

type Operation = { responses?: Record<string, { headers?: Record<string, Json> }> };

/** Each response header once, in `components.headers`, referred to from every response that sends it. */
function shareHeaders(paths: Record<string, Record<string, Operation>>): Record<string, Json> {
  const shared: Record<string, Json> = {};
  for (const operation of Object.values(paths).flatMap((item) => Object.values(item))) {
    for (const response of Object.values(operation.responses ?? {})) {
      for (const [name, header] of Object.entries(response.headers ?? {})) {
        shared[name] ??= header;
        response.headers![name] = { $ref: `${HEADER_REF}${name}` };
      }
    }
  }
  return shared;
}

/**
 * The whole document: the zod registry's named schemas become components. note: the library
 * emits an input and an output variant of every named schema; only those the paths use stay.
 */
export const transformDocument: SwaggerTransformObject = (document) => {
  const openapi = zodTransformObject(document) as {
    paths?: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, Json>; headers?: Record<string, Json> };
  };
  const paths = openapi.paths ?? {};
  const schemas = openapi.components?.schemas ?? {};
  const used = referencedSchemas(paths, schemas);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  const headers = shareHeaders(paths);
  return { ...openapi, components: { ...openapi.components, schemas: kept, headers } } as ReturnType<SwaggerTransformObject>;
};
