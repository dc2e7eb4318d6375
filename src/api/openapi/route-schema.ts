import { z } from 'zod';
import type { ResponseHeaderName } from '../../shared/api-schemas/headers.js';

/** An OpenAPI Example Object. */
export interface Example {
  summary: string;
  description?: string;
  value: unknown;
}

export type Examples = Record<string, Example>;

/**
 * One status of a route's `schema.response`, in the per-content-type form Fastify and
 * fastify-type-provider-zod both understand: Fastify serializes `application/json` replies
 * through `schema`, the document shows the description, headers and examples (the route
 * transform carries the last two over, which the zod transform alone would drop).
 */
export interface JsonResponse {
  description: string;
  headers: readonly ResponseHeaderName[];
  /** of `headers`, those some answers of this status do not carry (see transforms.ts, isAlwaysSent) */
  sometimes?: readonly ResponseHeaderName[];
  content: { 'application/json': { schema: z.ZodType; examples: Examples }; 'text/csv'?: { schema: z.ZodType; example: string } };
  /** an error status's shape (error-body.ts) before its codes were listed, so that codes can be added (refused-before-route.ts) */
  errorShape?: z.ZodType;
}

export function jsonResponse(
  schema: z.ZodType,
  doc: {
    description: string;
    headers?: readonly ResponseHeaderName[];
    sometimes?: readonly ResponseHeaderName[];
    examples: Examples;
    /** the same answer as a CSV download (`Accept: text/csv`), sent as a stream: never serialized */
    csv?: { example: string };
  },
): JsonResponse {
  return {
    description: doc.description,
    headers: doc.headers ?? [],
    ...(doc.sometimes ? { sometimes: doc.sometimes } : {}),
    content: {
      'application/json': { schema, examples: doc.examples },
      ...(doc.csv ? { 'text/csv': { schema: z.string(), example: doc.csv.example } } : {}),
    },
  };
}

/** A request body schema carrying its examples to the document (`x-examples` becomes the media type's `examples`). */
export function jsonBody<Schema extends z.ZodType>(schema: Schema, examples: Examples): Schema {
  return schema.meta({ 'x-examples': examples });
}

/**
 * A status whose body is streamed in one of several media types, never serialized (an export):
 * for each, its example as text.
 */
export interface StreamResponse {
  description: string;
  headers: readonly ResponseHeaderName[];
  content: Record<string, { schema: z.ZodType; example: string }>;
}

export function streamResponse(doc: { description: string; headers: readonly ResponseHeaderName[]; examples: Record<string, string> }): StreamResponse {
  const content = Object.fromEntries(Object.entries(doc.examples).map(([type, text]) => [type, { schema: z.string(), example: text }]));
  return { description: doc.description, headers: doc.headers, content };
}

/** A status built by jsonResponse or streamResponse, whose headers and examples the document carries (transforms.ts). */
export function isDocumentedResponse(value: unknown): value is JsonResponse | StreamResponse {
  return typeof value === 'object' && value !== null && 'content' in value && 'headers' in value && Array.isArray(value.headers);
}

export function isJsonResponse(value: unknown): value is JsonResponse {
  return isDocumentedResponse(value) && 'application/json' in value.content;
}
