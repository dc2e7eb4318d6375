import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RATE_LIMIT_HEADER_NAMES, RESPONSE_HEADERS, type ResponseHeaderName } from '../../shared/api-schemas/headers.js';
import { OPEN_ENUM } from '../../shared/rows/open-enum.js';
import { withRefusalsBeforeRoute } from './refused-before-route.js';
import { isDocumentedResponse } from './route-schema.js';

/** The partner API: every route under it is documented; operator endpoints and /docs are not. */
export const DOCUMENTED_PREFIX = '/v1/';

const zodTransform = createJsonSchemaTransform({});
const zodTransformObject = createJsonSchemaTransformObject({});

/** Marks, inside a header's schema, a header the response always carries; shareHeaders turns it into `required`. */
const ALWAYS_SENT = 'x-always-sent';

function headerSchema(name: ResponseHeaderName, always: boolean): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(RESPONSE_HEADERS[name], { target: 'draft-2020-12', io: 'output' });
  return always ? { ...schema, [ALWAYS_SENT]: true } : schema;
}

/**
 * Whether every answer of `status` carries the header: `Idempotent-Replayed` only on a replay;
 * the rate-limit headers on every success, but on an error only when the key was known before it
 * (a lockout or an overloaded process refuses first); others as the route declares.
 */
function isAlwaysSent(name: ResponseHeaderName, status: string, sometimes: readonly ResponseHeaderName[]): boolean {
  if (name === 'Idempotent-Replayed' || sometimes.includes(name)) return false;
  if ((RATE_LIMIT_HEADER_NAMES as readonly string[]).includes(name)) return Number(status) < 400;
  return true;
}

/**
 * Request headers as the document spells them. note: a route validates them by the lower-case
 * names Node gives them; a client sends them in any case.
 */
const REQUEST_HEADER_SPELLING: Record<string, string> = { 'idempotency-key': 'Idempotency-Key' };

function spelledAsSent(headers: { properties?: Record<string, unknown>; required?: string[] }): void {
  const spelled = (name: string) => REQUEST_HEADER_SPELLING[name] ?? name;
  if (headers.properties) headers.properties = Object.fromEntries(Object.entries(headers.properties).map(([name, schema]) => [spelled(name), schema]));
  if (headers.required) headers.required = headers.required.map(spelled);
}

/** Marks an operation whose body may be left out; markOptionalBodies turns it into the body's `required: false`. */
const OPTIONAL_BODY = 'x-optional-body';

/** A body schema that takes no body at all (a roll's, a cancel's): the framework hands a missing body over as undefined or null. */
function isOptionalBody(schema: unknown): boolean {
  return schema instanceof z.ZodType && schema.safeParse(undefined).success;
}

/**
 * Per route: the refusals any request can get before the route runs added to its responses
 * (refused-before-route.ts), zod schemas to JSON Schema (fastify-type-provider-zod), request
 * headers spelt as sent, then the response headers and examples of each `jsonResponse` carried
 * over, which that transform leaves out.
 */
export const transformRoute: SwaggerTransform = (document) => {
  if (!document.url.startsWith(DOCUMENTED_PREFIX)) return { schema: { hide: true }, url: document.url };
  const routeResponses = document.schema?.response as Record<string, unknown> | undefined;
  // note: for the document only; the route's own schema, which Fastify serializes with, is left as it is
  const schema = routeResponses === undefined ? document.schema : { ...document.schema, response: withRefusalsBeforeRoute(document.url, routeResponses) };
  const result = zodTransform({ ...document, schema });
  const requestHeaders = (result.schema as { headers?: { properties?: Record<string, unknown>; required?: string[] } }).headers;
  if (requestHeaders) spelledAsSent(requestHeaders);
  // note: @fastify/swagger copies an `x-` key of the route's schema onto the operation
  if (isOptionalBody(document.schema?.body)) (result.schema as Record<string, unknown>)[OPTIONAL_BODY] = true;
  const declared = schema?.response as Record<string, unknown> | undefined;
  const transformed = (result.schema as { response?: Record<string, { headers?: unknown; content: Record<string, { examples?: unknown; example?: unknown }> }> })
    .response;
  if (declared === undefined || transformed === undefined) return result;
  for (const [status, response] of Object.entries(declared)) {
    const target = transformed[status];
    if (!isDocumentedResponse(response) || target === undefined) continue;
    const sometimes = 'sometimes' in response ? (response.sometimes ?? []) : [];
    target.headers = Object.fromEntries(response.headers.map((name) => [name, headerSchema(name, isAlwaysSent(name, status, sometimes))]));
    for (const [type, declaredMedia] of Object.entries(response.content)) {
      const media = target.content[type];
      if (media === undefined || declaredMedia === undefined) continue;
      if ('examples' in declaredMedia) media.examples = declaredMedia.examples;
      else media.example = declaredMedia.example;
    }
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

type Operation = {
  [OPTIONAL_BODY]?: boolean;
  requestBody?: { required?: boolean };
  responses?: Record<string, { headers?: Record<string, Json> }>;
};

const operationsOf = (paths: Record<string, Record<string, Operation>>) => Object.values(paths).flatMap((item) => Object.values(item));

/**
 * A request body the route also takes left out is not `required` (@fastify/swagger makes every
 * declared body required): a gateway that validates requests must let such a request through.
 */
function markOptionalBodies(paths: Record<string, Record<string, Operation>>): void {
  for (const operation of operationsOf(paths)) {
    if (operation[OPTIONAL_BODY] !== true) continue;
    delete operation[OPTIONAL_BODY];
    if (operation.requestBody) operation.requestBody.required = false;
  }
}

/**
 * Each string schema marked OPEN_ENUM (open-enum.ts) as `anyOf` its known values and any string:
 * tools still show the values, and a client validating answers with the document does not refuse
 * one added later (docs/errors.md#codes).
 */
function openEnums(node: Json): Json {
  if (Array.isArray(node)) return node.map(openEnums);
  if (typeof node !== 'object' || node === null) return node;
  const entries = Object.entries(node).map(([key, value]) => [key, openEnums(value)] as const);
  const schema = Object.fromEntries(entries) as Record<string, unknown>;
  if (schema[OPEN_ENUM] !== true) return schema;
  const { [OPEN_ENUM]: _open, type: _type, enum: known, ...rest } = schema;
  if (!Array.isArray(known)) throw new Error(`${OPEN_ENUM}: a schema without enum`);
  return { ...rest, anyOf: [{ type: 'string', enum: known }, { type: 'string' }] };
}

/**
 * Each header a response always carries once, `required`, in `components.headers`, referred to
 * from every response that always sends it; a header only some answers carry stays in the
 * response, not required.
 */
function shareHeaders(paths: Record<string, Record<string, Operation>>): Record<string, Json> {
  const shared: Record<string, Json> = {};
  for (const operation of operationsOf(paths)) {
    for (const response of Object.values(operation.responses ?? {})) {
      for (const [name, header] of Object.entries(response.headers ?? {})) {
        const { schema, ...rest } = header as { schema: Record<string, unknown> };
        const { [ALWAYS_SENT]: always, ...plainSchema } = schema;
        if (always !== true) {
          response.headers![name] = { ...rest, schema: plainSchema };
          continue;
        }
        shared[name] ??= { ...rest, required: true, schema: plainSchema };
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
  const paths = openEnums(openapi.paths ?? {}) as Record<string, Record<string, Operation>>;
  const schemas = openEnums(openapi.components?.schemas ?? {}) as Record<string, Json>;
  const used = referencedSchemas(paths, schemas);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  markOptionalBodies(paths);
  const headers = shareHeaders(paths);
  return { ...openapi, paths, components: { ...openapi.components, schemas: kept, headers } } as ReturnType<SwaggerTransformObject>;
};
