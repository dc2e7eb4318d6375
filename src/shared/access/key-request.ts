import { z } from 'zod';
import { fitsCodePoints, trimmedTextPattern } from '../rows/field-schemas.js';
import { CONTROL_CHARACTERS } from '../rows/control-characters.js';
import { parseScope, SCOPES, toUnderscoreForm, type Scope } from './scopes.js';
import type { ApiError } from '../errors/api-error.js';
import { apiErrors } from '../errors/api-errors.js';
import { echoedText } from '../errors/echoed-text.js';
import { ALLOWED_IPS_MAX, canonicalIpEntry } from './allowed-ips.js';

export const KEY_LABEL_MAX = 80;
/** `expires_at` is at least this far ahead (docs/access.md#expiry). */
export const KEY_EXPIRY_MIN_SEC = 60;
/** ... and at most this far: 3 years, 1,096 days. */
export const KEY_EXPIRY_MAX_SEC = 1096 * 24 * 60 * 60;

const LABEL_TEXT = `label: required, 1 to ${KEY_LABEL_MAX} characters`;
const EXPIRES_AT_TEXT = 'expires_at: must be an ISO 8601 date and time with a time zone, at least 60 seconds and at most 1096 days ahead';
const ALLOWED_IPS_TEXT = `allowed_ips: must be null or 1 to ${ALLOWED_IPS_MAX} IPv4 or IPv6 addresses or CIDR blocks`;

/** A key's label, at creation and in a change: trimmed, 1 to 80 characters, no control character. */
const KeyLabelSchema = z
  .string({ error: LABEL_TEXT })
  .trim()
  .min(1, LABEL_TEXT)
  .refine((s) => fitsCodePoints(s, KEY_LABEL_MAX), `label: must be at most ${KEY_LABEL_MAX} characters`)
  .refine((s) => !CONTROL_CHARACTERS.test(s), 'label: must not contain control characters')
  // note: the length is counted once trimmed, so the document says it as a pattern
  .meta({ pattern: trimmedTextPattern(KEY_LABEL_MAX), description: `Trimmed, 1 to ${KEY_LABEL_MAX} characters (counted once trimmed).` });

/**
 * `expires_at`: when the key stops working, an ISO 8601 date and time with its zone, from 60 s to
 * 1,096 days ahead. note: "ahead" of the moment the body is read; the bounds keep a typo (a past
 * date, a year 2062) from making a key that is dead at once or that never ends in practice.
 */
const ExpiresAtSchema = z.iso
  .datetime({ offset: true, error: EXPIRES_AT_TEXT })
  .transform((value) => new Date(value))
  .refine((date) => {
    const ahead = date.getTime() - Date.now();
    return ahead >= KEY_EXPIRY_MIN_SEC * 1000 && ahead <= KEY_EXPIRY_MAX_SEC * 1000;
  }, EXPIRES_AT_TEXT)
  .meta({
    description: 'When the key stops working: an ISO 8601 date and time with a zone, at least 60 seconds and at most 1,096 days (3 years) ahead. Leave it out for a key that does not expire.',
    examples: ['2027-03-01T00:00:00Z'],
  });

/**
 * `allowed_ips`: 1 to 20 IPv4 or IPv6 addresses or CIDR blocks, made canonical and merged
 * (canonicalIpEntry); a bad entry is named in the 400. `[]` is refused: it would allow no
 * address at all, which nobody means (null allows any).
 */
export const AllowedIpsSchema = z
  .array(z.string({ error: 'allowed_ips: every entry must be a string' }), { error: ALLOWED_IPS_TEXT })
  .min(1, ALLOWED_IPS_TEXT)
  .max(ALLOWED_IPS_MAX, ALLOWED_IPS_TEXT)
  .transform((entries, context): string[] => {
    const canonical = new Set<string>();
    for (const entry of entries) {
      const parsed = canonicalIpEntry(entry);
      if (parsed === undefined) {
        context.issues.push({ code: 'custom', message: `allowed_ips: ${echoedText(entry, { quoted: true })} is not an IPv4 or IPv6 address or CIDR block`, input: entry });
        return z.NEVER;
      }
      canonical.add(parsed);
    }
    return [...canonical];
  })
  .meta({
    description: `The client addresses the key works from: 1 to ${ALLOWED_IPS_MAX} IPv4 or IPv6 addresses or CIDR blocks, stored canonical (\`203.0.113.9/24\` as \`203.0.113.0/24\`). Leave it out, or send null in a change, for any address.`,
    examples: [['203.0.113.0/24', '2001:db8:4::/48']],
  });

/** What a custom issue of an unknown scope carries, to name the scope in the 400. */
interface UnknownScopeParams {
  unknownScope: string;
}

/**
 * The key-creation body, as the route validates it and the document shows it: the label trimmed,
 * the scopes parsed, merged and in SCOPES order. An unknown scope is refused by name: a typo must
 * not silently give a weaker key. A failing body is answered by keyRequestRefusal.
 */
export const CreateKeyBodySchema = z.object(
  {
    label: KeyLabelSchema,
    scopes: z
      .array(
        z.string({ error: 'scopes: every entry must be a string' }).meta({
          // note: documentation only; an unknown scope is refused by name (the transform below).
          enum: [...SCOPES, ...SCOPES.map(toUnderscoreForm).filter((s) => !(SCOPES as readonly string[]).includes(s))],
        }),
        { error: 'scopes: required, a non-empty array' },
      )
      .min(1, 'scopes: at least one scope is required')
      .transform((candidates, context): Scope[] => {
        const scopes = new Set<Scope>();
        for (const candidate of candidates) {
          const scope = parseScope(candidate);
          if (scope === undefined) {
            const params: UnknownScopeParams = { unknownScope: candidate };
            context.issues.push({ code: 'custom', message: `scopes: unknown scope "${candidate}"`, input: candidate, params });
            return z.NEVER;
          }
          scopes.add(scope);
        }
        return SCOPES.filter((s) => scopes.has(s));
      })
      .meta({ description: 'One or more scopes, in colon or underscore form; duplicates are merged, an unknown scope is refused.' }),
    expires_at: ExpiresAtSchema.optional(),
    allowed_ips: AllowedIpsSchema.optional(),
  },
  { error: 'body: not an object' },
);

/**
 * `PATCH /v1/api/keys/{id}`'s body: the label (the rules of creation) and the allowed addresses
 * (null: any address again); a field left out stays as it is.
 */
export const ChangeKeyBodySchema = z.object(
  {
    label: KeyLabelSchema.optional(),
    allowed_ips: AllowedIpsSchema.nullable().optional(),
  },
  { error: 'body: not an object' },
);

export type ChangeKeyRequest = z.output<typeof ChangeKeyBodySchema>;

export type CreateKeyRequest = z.output<typeof CreateKeyBodySchema>;

/** One problem of a key-creation body: where (`''` for the body itself), and what. */
export interface KeyBodyProblem {
  path: string;
  message: string;
  /** the scope named by an unknown-scope problem */
  unknownScope?: string;
}

/**
 * The 400 for a key-creation body that failed CreateKeyBodySchema (docs/access.md#api-keys): not
 * an object; else every problem of its shape, joined; else the first unknown scope by name.
 */
export function keyRequestRefusal(problems: readonly KeyBodyProblem[], envelope: () => ApiError = apiErrors.keyEnvelope): ApiError {
  if (problems.some((problem) => problem.path === '')) return envelope();
  const shape = problems.filter((problem) => problem.unknownScope === undefined);
  if (shape.length > 0) return apiErrors.keyBody(shape.map((problem) => problem.message).join('; '));
  return apiErrors.unknownScope(problems[0]?.unknownScope ?? '', SCOPES);
}

/** The problems of a zod validation of CreateKeyBodySchema. */
export function keyBodyProblemsOf(issues: readonly z.core.$ZodIssue[]): KeyBodyProblem[] {
  return issues.map((issue) => ({
    path: issue.path.join('/'),
    message: issue.message,
    ...(issue.code === 'custom' && issue.params?.['unknownScope'] !== undefined ? { unknownScope: String(issue.params['unknownScope']) } : {}),
  }));
}
