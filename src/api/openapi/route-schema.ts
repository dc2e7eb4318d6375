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

export function isJsonResponse(value: unknown): value is JsonResponse {
  return typeof value === 'object' && value !== null && 'content' in value && 'headers' in value && Array.isArray(value.headers);
}
