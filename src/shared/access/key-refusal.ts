import type { ApiError } from '../errors/api-error.js';
import { apiErrors } from '../errors/api-errors.js';
import { isAllowedFrom, type AllowedIps } from './allowed-ips.js';

/**
 * Whether a key works now (docs/access.md#key-lifecycle): the one definition that every request's
 * authentication and every file upload's acceptance apply, so that a key is refused at the same
 * instant by both.
 */

/** What a key that was found (not revoked) carries of its end and its addresses. */
export interface KeyLimits {
  /** its end as epoch milliseconds; null: never */
  expiresAtMs: number | null;
  /** parsed once where the key is loaded (compileAllowedIps); null: any address */
  allowedIps: AllowedIps | null;
}

/** Why a key is refused now: revoked (or gone), ended, or used from an address it does not allow. */
export type KeyRefusal = 'revoked' | 'expired' | 'address';

/**
 * Why `key` may not be used now from `ip` (a canonical client address), or undefined when it may.
 * note: on every request, so no allocation unless the key has allowed addresses.
 */
export function keyRefusal(key: (KeyLimits & { isRevoked?: boolean }) | undefined, ip: string, nowMs = Date.now()): KeyRefusal | undefined {
  if (key === undefined || key.isRevoked === true) return 'revoked';
  if (key.expiresAtMs !== null && nowMs >= key.expiresAtMs) return 'expired';
  if (key.allowedIps !== null && !isAllowedFrom(key.allowedIps, ip)) return 'address';
  return undefined;
}

/** The answer to a refusal: 401 as an unknown key, 401 `api_key_expired`, 403 `ip_not_allowed`. */
export function keyRefusalError(refusal: KeyRefusal): ApiError {
  if (refusal === 'revoked') return apiErrors.apiKeyInvalid();
  return refusal === 'expired' ? apiErrors.apiKeyExpired() : apiErrors.ipNotAllowed();
}
