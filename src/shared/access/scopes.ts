/** Every scope a key can hold (docs/access.md#scopes), in the canonical colon form. */
export const SCOPES = ['listings:write', 'listings:read', 'jobs:read', 'earnings:read', 'webhooks'] as const;
export type Scope = (typeof SCOPES)[number];

const BY_ANY_FORM = new Map<string, Scope>(
  SCOPES.flatMap((scope) => [
    [scope, scope],
    [toUnderscoreForm(scope), scope],
  ]),
);

/** Accepts `listings:write` or `listings_write`; undefined for anything else. */
export function parseScope(input: string): Scope | undefined {
  return BY_ANY_FORM.get(input);
}

export function toUnderscoreForm(scope: string): string {
  return scope.replaceAll(':', '_');
}
