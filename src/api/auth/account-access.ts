import { apiErrors } from '../../shared/errors/api-errors.js';
import type { Account } from '../../shared/repositories/accounts.js';
import { hasApiAccess, type ApiTier } from '../../shared/access/tiers.js';

/** Only Enterprise and Global accounts may use the API (spec 5.5): 402 with the spec 7 body. */
export function requireApiTier(account: Account, upgradeUrl: string): ApiTier {
  const tier = account.subscription_tier;
  if (!hasApiAccess(tier)) {
    throw apiErrors.tierRequired(tier, upgradeUrl);
  }
  return tier;
}
