import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Counter } from 'prom-client';
import { ApiError } from '../../shared/errors/api-error.js';
import { clientIp } from '../client-ip.js';
import type { AuthLockout } from '../limits/auth-lockout.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

export interface AdminCredentials {
  user: string;
  password: string;
}

const REALM = 'bulk-import admin';

/** The user and password of an `Authorization: Basic ...` header; anything else (Bearer) is none. */
export function basicCredentials(header: string | undefined): AdminCredentials | undefined {
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** note: equal-length digests, so neither the content nor the length of a secret leaks through timing. */
function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), expected);
}

function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send(error.body);
}

/**
 * HTTP basic auth for the operator endpoints (Bull Board, /metrics), checked against
 * ADMIN_USER / ADMIN_PASSWORD in constant time. An API key or session token never opens them.
 * Wrong credentials count against the address in `lockout` (10 in 5 minutes lock it out of both
 * for 15 minutes, the right password included; each of those 429s counts in `lockouts`); a request
 * without credentials, as a browser's first one, is not a guess and is not counted.
 * note: replies directly instead of throwing, because Bull Board's routes have their own error
 * handler, which would turn an ApiError into its own body.
 */
export function adminBasicAuth(expected: AdminCredentials, lockout: AuthLockout, lockouts: Pick<Counter, 'inc'>): onRequestAsyncHookHandler {
  const userDigest = createHash('sha256').update(expected.user).digest();
  const passwordDigest = createHash('sha256').update(expected.password).digest();

  return async function authenticateAdmin(request: FastifyRequest, reply: FastifyReply) {
    const ip = clientIp(request);
    try {
      const lockedForSec = await lockout.lockedForSec(ip);
      if (lockedForSec !== undefined) {
        lockouts.inc();
        return sendError(reply, apiErrors.lockedOut(lockedForSec));
      }
    } catch (error) {
      if (error instanceof ApiError) return sendError(reply, error);
      throw error;
    }
    const given = basicCredentials(request.headers.authorization);
    if (given !== undefined) {
      // note: both compared every time, so a right user name is refused as fast as a wrong one.
      const userOk = sameSecret(given.user, userDigest);
      const passwordOk = sameSecret(given.password, passwordDigest);
      if (userOk && passwordOk) return;
      try {
        await lockout.recordFailure(ip);
      } catch (error) {
        if (error instanceof ApiError) return sendError(reply, error);
        throw error;
      }
    }
    request.log.info({ credentialsGiven: given !== undefined }, 'operator endpoint refused: missing or wrong basic-auth credentials');
    return sendError(reply.header('www-authenticate', `Basic realm="${REALM}"`), apiErrors.adminAuthRequired());
  };
}
