import { z } from 'zod';
import { fitsCodePoints } from '../rows/field-schemas.js';
import { CONTROL_CHARACTERS } from '../rows/control-characters.js';
import { parseScope, SCOPES, toUnderscoreForm, type Scope } from './scopes.js';
import type { ApiError } from '../errors/api-error.js';
import { apiErrors } from '../errors/api-errors.js';

export const KEY_LABEL_MAX = 80;

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
  },
  { error: 'body: not an object' },
);

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
export function keyRequestRefusal(problems: readonly KeyBodyProblem[]): ApiError {
  if (problems.some((problem) => problem.path === '')) return apiErrors.keyEnvelope();
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
