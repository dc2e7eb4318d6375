import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

const ALGORITHM = 'HS256';

function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/** Session tokens are minted only by the operator CLI and tests; the HTTP service never issues them. */
export async function signSessionToken(accountId: string, secret: string, ttlSec: number): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(accountId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSec)
    .sign(secretKey(secret));
}

export type SessionVerification =
  | { ok: true; accountId: string }
  | { ok: false; reason: 'malformed' | 'invalid' };

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** How far ahead of this clock a token's `iat` may be, for clocks that differ a little. */
const CLOCK_SKEW_SEC = 60;

/**
 * Verifies a session token (docs/access.md#session-tokens): HS256, `sub`, `exp` and `iat` required, not expired,
 * not issued in the future, and a lifetime (`exp - iat`) of at most `maxTtlSec`, so a token
 * minted to live for years is refused however it was made.
 */
export async function verifySessionToken(token: string, secret: string, maxTtlSec: number): Promise<SessionVerification> {
  if (!JWT_SHAPE.test(token)) return { ok: false, reason: 'malformed' };
  try {
    const { payload } = await jwtVerify(token, secretKey(secret), {
      algorithms: [ALGORITHM],
      requiredClaims: ['exp', 'iat', 'sub'],
      clockTolerance: 0,
    });
    if (typeof payload.sub !== 'string') return { ok: false, reason: 'invalid' };
    const { iat, exp } = payload as { iat: number; exp: number };
    if (iat > Date.now() / 1000 + CLOCK_SKEW_SEC || exp - iat > maxTtlSec) return { ok: false, reason: 'invalid' };
    return { ok: true, accountId: payload.sub };
  } catch (error) {
    // A token that does not even decode as a JWT is malformed; everything else is invalid.
    if (error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JWTInvalid) {
      return { ok: false, reason: error instanceof joseErrors.JWSInvalid ? 'malformed' : 'invalid' };
    }
    return { ok: false, reason: 'invalid' };
  }
}
