import { z } from 'zod';
import { CreateKeyBodySchema } from '../access/key-request.js';
import { ACTIVE_KEY_CAP, KEY_LIST_LIMIT, KEY_PAGE_MAX, KEY_STATUSES } from '../repositories/api-keys.js';
import { SCOPES, toUnderscoreForm } from '../access/scopes.js';
import { KeyIdParameterSchema } from './id-parameter.js';
import { pageLimitSchema } from './page-limit.js';

/** The create response's `note` (docs/endpoints.md#key-management). */
export const SHOWN_ONCE_NOTE =
  'This is the only time the full API key is shown. Store it securely (for example in a secrets manager); it cannot be retrieved again. Only its prefix is kept.';

const KeyIdSchema = z.guid().meta({ description: 'The key\'s id.' });
const KeyPrefixSchema = z.string().regex(/^[0-9a-f]{8}$/).meta({ description: 'The 8 hex characters after `svc_live_`; the only part of a key that is stored readable.' });
const UNDERSCORE_SCOPES = SCOPES.map(toUnderscoreForm) as [string, ...string[]];

/** A key as listed (docs/endpoints.md#key-management): never the full key. Timestamps are ISO 8601 in UTC. */
export const KeyRecordSchema = z
  .object({
    id: KeyIdSchema,
    label: z.string(),
    key_prefix: KeyPrefixSchema,
    scopes: z.array(z.enum(SCOPES)).meta({ description: 'In colon form.' }),
    is_revoked: z.boolean(),
    last_used_at: z.date().nullable().meta({ description: 'null until first used; updated at most about once a minute.' }),
    created_at: z.date(),
  })
  .meta({ id: 'ApiKey' });

export const KeyListResponseSchema = z
  .object({
    keys: z
      .array(KeyRecordSchema)
      .max(KEY_PAGE_MAX)
      .meta({ description: `Newest first (ties by id). Without a query parameter: the ${KEY_LIST_LIMIT} newest, revoked keys included; with one, a page of \`limit\` keys.` }),
    has_more: z.boolean().optional().meta({
      description: 'Only when the query has a parameter: more keys follow; ask again with `starting_after` the last id of `keys`. The list without parameters is `{keys}` alone, as it always was.',
    }),
  })
  .meta({ id: 'ApiKeyList' });

/**
 * `GET /v1/api/keys`' query (docs/endpoints.md#key-management): paging in the shape of the
 * import list. note: with no parameter at all the answer is the plain list, the 50 newest keys
 * of any status without `has_more`; the route tells the two apart by the parameters sent.
 */
export const KeyListQuerySchema = z.object({
  limit: pageLimitSchema(KEY_PAGE_MAX, KEY_LIST_LIMIT, 'keys'),
  starting_after: KeyIdParameterSchema.optional().meta({ description: 'A key id of the account: the page starts after it (the last id of the previous page). It may be a key of another status than `status` asks for.' }),
  status: z
    .enum(KEY_STATUSES)
    .default('all')
    .meta({ description: '`active`: only keys that work; `revoked`: only revoked keys; `all` (the default): both.' }),
});

export const CreateKeyRequestSchema = CreateKeyBodySchema.meta({ id: 'NewApiKey' });

export const CreateKeyResponseSchema = z
  .object({
    key: z
      .string()
      .regex(/^svc_live_[0-9a-f]{8}_[0-9a-f]{32}$/)
      .meta({ description: 'The full key, shown this once: it cannot be retrieved again.' }),
    metadata: z.object({
      id: KeyIdSchema,
      label: z.string(),
      key_prefix: KeyPrefixSchema,
      scopes: z.array(z.enum(UNDERSCORE_SCOPES)).meta({ description: 'In underscore form.' }),
      created_at: z.date(),
    }),
    note: z.string().meta({ description: 'Says that the full key is shown only once and must be stored securely.' }),
  })
  .meta({ id: 'CreatedApiKey', description: `An account may hold ${ACTIVE_KEY_CAP} active keys.` });

export const RevokeKeyResponseSchema = z
  .object({
    revoked: z.object({ id: KeyIdSchema, key_prefix: KeyPrefixSchema, is_revoked: z.literal(true) }),
  })
  .meta({ id: 'RevokedApiKey' });

export const KeyIdParamsSchema = z.object({ id: KeyIdParameterSchema.meta({ description: 'The key\'s id (a UUID); any other value, or another account\'s key, gets 404.' }) });
