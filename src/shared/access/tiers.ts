/** Tiers with API access and their per-account request quotas (docs/access.md#rate-limits). */
export const TIER_LIMITS = {
  enterprise: { perMinute: 300, perDay: 100_000 },
  global: { perMinute: 1_000, perDay: 500_000 },
} as const;

export type ApiTier = keyof typeof TIER_LIMITS;

export function hasApiAccess(tier: string): tier is ApiTier {
  return Object.hasOwn(TIER_LIMITS, tier);
}
