/**
 * What a secret the service deals in looks like, wherever it turns up in text a caller sent: an
 * API key (`svc_live_<8 hex>_<32 hex>`, in any case, its underscores perhaps percent-encoded as
 * a URL path carries them) and a session token (a JWT: three base64url parts, the first a JSON
 * header, so `eyJ`). note: looser than the checks that accept them (api-key.ts,
 * session-token.ts), on purpose: a partner who pastes a key into a path, an id or a header in
 * another spelling must not find it in our logs either (SECURITY.md).
 */
const SECRET_SHAPE = /svc(?:_|%5f)live(?:_|%5f)[0-9a-f]{8}(?:_|%5f)[0-9a-f]{32}|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/gi;

/** What a secret is written as, once taken out of a text. */
export const REDACTED_SECRET = '[redacted]';

/** Whether `text` holds something shaped like an API key or a session token. */
export function holdsSecretShape(text: string): boolean {
  SECRET_SHAPE.lastIndex = 0;
  return SECRET_SHAPE.test(text);
}

/** `text` with every API key and session token in it written as REDACTED_SECRET. */
export function withoutSecrets(text: string): string {
  return holdsSecretShape(text) ? text.replace(SECRET_SHAPE, REDACTED_SECRET) : text;
}
