import { z } from 'zod';
import { SCOPES } from '../access/scopes.js';
import { TIER_LIMITS } from '../access/tiers.js';

const API_TIERS = Object.keys(TIER_LIMITS) as [keyof typeof TIER_LIMITS, ...(keyof typeof TIER_LIMITS)[]];

/** `GET /v1/api/me` (docs/endpoints.md#get-v1apime): the account that owns the key, and the key. */
export const MeResponseSchema = z
  .object({
    id: z.guid().meta({ description: 'Account id.' }),
    display_name: z.string(),
    // note: only these tiers get past authentication (402 otherwise).
    subscription_tier: z.enum(API_TIERS),
    is_owner: z.boolean(),
    has_completed_onboarding: z.boolean(),
    key: z
      .object({
        prefix: z.string().regex(/^[0-9a-f]{8}$/).meta({ description: 'The 8 hex characters after `svc_live_`.' }),
        scopes: z.array(z.enum(SCOPES)).meta({ description: 'In colon form.' }),
        expires_at: z.date().nullable().meta({ description: 'When the key stops working; null: never.' }),
        allowed_ips: z
          .array(z.string())
          .nullable()
          .meta({ description: 'The client addresses and CIDR blocks the key works from, canonical; null: any address.' }),
      })
      .meta({ description: 'The key used on this request.' }),
  })
  .meta({ id: 'Account' });

export type MeResponse = z.infer<typeof MeResponseSchema>;
