import { z } from 'zod';
import { fitsCodePoints } from '../rows/field-schemas.js';
import { CONTROL_CHARACTERS } from '../rows/control-characters.js';
import { parseScope, SCOPES, toUnderscoreForm, type Scope } from './scopes.js';
import { apiErrors } from '../errors/api-errors.js';

export const KEY_LABEL_MAX = 80;

/**
 * The shape of the body. note: the route checks it itself (parseCreateKeyRequest), for the 400
 * texts below; the OpenAPI document shows this same schema.
 */
export const CreateKeyBodySchema = z.object({
  label: z
    .string({ error: 'label: required, 1 to 80 characters' })
    .trim()
    .min(1, 'label: required, 1 to 80 characters')
    .refine((s) => fitsCodePoints(s, KEY_LABEL_MAX), `label: must be at most ${KEY_LABEL_MAX} characters`)
    .refine((s) => !CONTROL_CHARACTERS.test(s), 'label: must not contain control characters')
    .meta({ maxLength: KEY_LABEL_MAX, description: `Trimmed, 1 to ${KEY_LABEL_MAX} characters.` }),
  scopes: z
    .array(
      z.string({ error: 'scopes: every entry must be a string' }).meta({
        // note: documentation only; unknown scopes are refused by name in parseCreateKeyRequest.
        enum: [...SCOPES, ...SCOPES.map(toUnderscoreForm).filter((s) => !(SCOPES as readonly string[]).includes(s))],
      }),
      { error: 'scopes: required, a non-empty array' },
    )
    .min(1, 'scopes: at least one scope is required')
    .meta({ description: 'One or more scopes, in colon or underscore form; duplicates are merged, an unknown scope is refused.' }),
});

export interface CreateKeyRequest {
  label: string;
  scopes: Scope[];
}

/**
 * `POST /v1/api/keys` body (docs/access.md#api-keys). Any unknown scope is refused by name: a typo must not
 * silently give a weaker key. Duplicates and the two spellings of a scope are merged.
 */
export function parseCreateKeyRequest(body: unknown): CreateKeyRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw apiErrors.keyEnvelope();
  }
  const parsed = CreateKeyBodySchema.safeParse(body);
  if (!parsed.success) {
    throw apiErrors.keyBody(parsed.error.issues.map((issue) => issue.message).join('; '));
  }
  const scopes = new Set<Scope>();
  for (const candidate of parsed.data.scopes) {
    const scope = parseScope(candidate);
    if (scope === undefined) {
      throw apiErrors.unknownScope(candidate, SCOPES);
    }
    scopes.add(scope);
  }
  return { label: parsed.data.label, scopes: SCOPES.filter((s) => scopes.has(s)) };
}
