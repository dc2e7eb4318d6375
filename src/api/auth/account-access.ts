import { apiErrors } from '../../shared/errors/api-errors.js';
import type { Account } from '../../shared/repositories/accounts.js';
import { hasApiAccess, type ApiTier } from '../../shared/access/tiers.js';

/** Only Enterprise and Global accounts may use the API (docs/access.md#tiers): 402 with its body. */
export function requireApiTier(account: Account, upgradeUrl: string): ApiTier {
  const tier = account.subscriptionTier;
  if (!hasApiAccess(tier)) {
    throw apiErrors.tierRequired(tier, upgradeUrl);
  }
  return tier;
}
