import { z } from 'zod';
import { TIER_LIMITS } from '../access/tiers.js';

/** `Idempotency-Key`: 1 to 255 printable ASCII characters (docs/partners.md#retrying-safely-idempotency-key). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

export const IdempotencyKeyHeaderSchema = z.string().regex(IDEMPOTENCY_KEY_PATTERN).meta({
  description:
    'Optional, 1 to 255 printable ASCII characters (a UUID, say), scoped to the account and kept 24 hours. A repeat with the same key and the same body gets the first result with `Idempotent-Replayed: true` and inserts nothing; the same key with another body gets 422. Reuse the key, with the same body, whenever you retry.',
  examples: ['5f0c6c1e-8a0b-4c1e-9a57-2f1d9b1c3e42'],
});

/**
 * The request headers of the routes that take an `Idempotency-Key`, as the route validates them:
 * Node gives header names in lower case; the document spells them as sent (transforms.ts). Loose:
 * the other headers stay on the request.
 */
export const IdempotencyHeadersSchema = z.looseObject({ 'idempotency-key': IdempotencyKeyHeaderSchema.optional() });

const count = () => z.number().int().nonnegative();
const { enterprise, global } = TIER_LIMITS;

/**
 * The response headers the API sets, by name as sent. One schema each, so the document and the
 * tests describe them alike.
 */
export const RESPONSE_HEADERS = {
  'X-Request-Id': z.string().meta({
    description: 'On every response: your own `X-Request-Id` when it is 1 to 128 characters of `A-Za-z0-9._:-`, else a generated UUID.',
  }),
  'X-RateLimit-Limit-Minute': count().meta({ description: 'Requests allowed per minute for the account (all its keys).' }),
  'X-RateLimit-Remaining-Minute': count().meta({ description: 'Requests left in the current minute window.' }),
  'X-RateLimit-Limit-Day': count().meta({ description: 'Requests allowed per day for the account.' }),
  'X-RateLimit-Remaining-Day': count().meta({ description: 'Requests left in the current day window.' }),
  'RateLimit-Policy': z.string().meta({
    description:
      'The account\'s quota policies, as in draft-ietf-httpapi-ratelimit-headers-10: a structured-field list (RFC 9651) of the policy names `"minute"` and `"day"`, each with `q`, the requests it allows (the `X-RateLimit-Limit-*` value of the tier), and `w`, its window in seconds. Parse it with a structured-field parser, not a regular expression.',
    examples: [`"minute";q=${enterprise.perMinute};w=60, "day";q=${enterprise.perDay};w=86400`, `"minute";q=${global.perMinute};w=60, "day";q=${global.perDay};w=86400`],
  }),
  'RateLimit': z.string().meta({
    description:
      'Where the account stands in each policy of `RateLimit-Policy`, as in draft-ietf-httpapi-ratelimit-headers-10: `r`, the requests left in the window (the `X-RateLimit-Remaining-*` value, never negative), and `t`, the whole seconds until the window ends and its count starts over (at least 1). On a 429 for a spent window, `Retry-After` is never earlier than that window\'s `t`.',
    examples: [`"minute";r=${enterprise.perMinute - 1};t=60, "day";r=${enterprise.perDay - 1};t=86400`, `"minute";r=0;t=42, "day";r=81234;t=51873`],
  }),
  'Retry-After': z.number().int().positive().meta({ description: 'Seconds to wait before retrying.' }),
  'Location': z.string().meta({
    description: 'Where the import this answer names can be read: `/v1/api/imports/<import_id>`.',
    examples: ['/v1/api/imports/0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76'],
  }),
  'Idempotent-Replayed': z.literal('true').meta({
    description: 'Present when this is the recorded result of an earlier request with the same `Idempotency-Key`; nothing was inserted by this one.',
  }),
} as const;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;

export const RATE_LIMIT_HEADER_NAMES = [
  'X-RateLimit-Limit-Minute',
  'X-RateLimit-Remaining-Minute',
  'X-RateLimit-Limit-Day',
  'X-RateLimit-Remaining-Day',
  'RateLimit-Policy',
  'RateLimit',
] as const satisfies readonly ResponseHeaderName[];
