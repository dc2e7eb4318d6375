import { ApiError } from '../../shared/api-error.js';
import type { Account } from '../../shared/repositories/accounts.js';
import { hasApiAccess, type ApiTier } from '../../shared/tiers.js';

/** Only Enterprise and Global accounts may use the API (spec 5.5): 402 with the spec 7 body. */
export function requireApiTier(account: Account, upgradeUrl: string): ApiTier {
  const tier = account.subscription_tier;
  if (!hasApiAccess(tier)) {
    throw new ApiError(402, {
      error: 'API access requires an Enterprise or Global subscription',
      current_tier: tier,
      upgrade_url: upgradeUrl,
    });
  }
  return tier;
}
