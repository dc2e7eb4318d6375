import { z } from 'zod';
import { ChangeKeyBodySchema, CreateKeyBodySchema } from '../access/key-request.js';
import { ACTIVE_KEY_CAP, KEY_LIST_LIMIT, KEY_PAGE_MAX, KEY_STATES, KEY_STATUSES } from '../repositories/api-keys.js';
import { SCOPES, toUnderscoreForm } from '../access/scopes.js';
import { KeyIdParameterSchema } from './id-parameter.js';
import { pageLimitSchema } from './page-limit.js';

/** The create response's `note` (docs/endpoints.md#key-management). */
export const SHOWN_ONCE_NOTE =
  'This is the only time the full API key is shown. Store it securely (for example in a secrets manager); it cannot be retrieved again. Only its prefix is kept.';

const KeyIdSchema = z.guid().meta({ description: 'The key\'s id.' });
const KeyPrefixSchema = z.string().regex(/^[0-9a-f]{8}$/).meta({ description: 'The 8 hex characters after `svc_live_`; the only part of a key that is stored readable.' });
const UNDERSCORE_SCOPES = SCOPES.map(toUnderscoreForm) as [string, ...string[]];
const ExpiresAtSchema = z.date().nullable().meta({ description: 'When the key stops working (ISO 8601, UTC); null: never.' });
const AllowedIpsSchema = z
  .array(z.string())
  .nullable()
  .meta({ description: 'The client addresses and CIDR blocks the key works from, canonical (a single address without a prefix length, a block as its network); null: any address.' });

/** The longest grace period of a roll: 7 days. */
export const ROLL_GRACE_MAX_SEC = 604_800;
/** A roll's grace period when the body names none: a day. */
export const ROLL_GRACE_DEFAULT_SEC = 86_400;

/** A key as listed (docs/endpoints.md#key-management): never the full key. Timestamps are ISO 8601 in UTC. */
export const KeyRecordSchema = z
  .object({
    id: KeyIdSchema,
    label: z.string(),
    key_prefix: KeyPrefixSchema,
    scopes: z.array(z.enum(SCOPES)).meta({ description: 'In colon form.' }),
    is_revoked: z.boolean(),
    status: z.enum(KEY_STATES).meta({ description: '`active`: the key works; `expired`: its `expires_at` has passed (after a roll too); `revoked`: revoked.' }),
    expires_at: ExpiresAtSchema,
    allowed_ips: AllowedIpsSchema,
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
    .meta({ description: '`active`: only keys that work; `expired`: only keys whose `expires_at` has passed; `revoked`: only revoked keys; `all` (the default): every key.' }),
});

export const CreateKeyRequestSchema = CreateKeyBodySchema.meta({ id: 'NewApiKey' });

/** What the create answer and a roll's 201 share: the full key, shown once, and its record's main fields. */
const createdKeyFields = {
  key: z
    .string()
    .regex(/^svc_live_[0-9a-f]{8}_[0-9a-f]{32}$/)
    .meta({ description: 'The full key, shown this once: it cannot be retrieved again.' }),
  // note: exactly the fields the contract names (docs/endpoints.md#key-management); the new
  // ones sit beside it, so a client that reads `metadata` sees what it always saw.
  metadata: z.object({
    id: KeyIdSchema,
    label: z.string(),
    key_prefix: KeyPrefixSchema,
    scopes: z.array(z.enum(UNDERSCORE_SCOPES)).meta({ description: 'In underscore form.' }),
    created_at: z.date(),
  }),
  note: z.string().meta({ description: 'Says that the full key is shown only once and must be stored securely.' }),
  expires_at: ExpiresAtSchema,
  allowed_ips: AllowedIpsSchema,
};

export const CreateKeyResponseSchema = z
  .object(createdKeyFields)
  .meta({ id: 'CreatedApiKey', description: `An account may hold ${ACTIVE_KEY_CAP} active keys.` });

/** `POST /v1/api/keys/{id}/roll`'s body: how long the old key keeps working. */
export const RollKeyRequestSchema = z
  .object(
    {
      expires_in_sec: z
        .number()
        .int()
        .min(0)
        .max(ROLL_GRACE_MAX_SEC)
        .default(ROLL_GRACE_DEFAULT_SEC)
        .meta({ description: `Seconds the old key keeps working, 0 to ${ROLL_GRACE_MAX_SEC} (7 days; 0 ends it at once); default ${ROLL_GRACE_DEFAULT_SEC} (a day). It never works past its own \`expires_at\`.` }),
    },
  )
  // note: the body may be left out altogether (the default grace period), which the framework
  // hands over as null, as it hands over the JSON body `null`: the route tells them apart.
  .nullish()
  .meta({ id: 'RollApiKey' });

export const RollKeyResponseSchema = z
  .object({
    ...createdKeyFields,
    rolled: z
      .object({ id: KeyIdSchema, key_prefix: KeyPrefixSchema, expires_at: z.date().meta({ description: 'When the old key stops working.' }) })
      .meta({ description: 'The old key, which works until `expires_at`.' }),
  })
  .meta({ id: 'RolledApiKey', description: 'The new key has the old one\'s label, scopes and allowed addresses, and no expiry.' });

export const ChangeKeyRequestSchema = ChangeKeyBodySchema.meta({ id: 'ApiKeyChange' });

export const RevokeKeyResponseSchema = z
  .object({
    revoked: z.object({ id: KeyIdSchema, key_prefix: KeyPrefixSchema, is_revoked: z.literal(true) }),
  })
  .meta({ id: 'RevokedApiKey' });

export const KeyIdParamsSchema = z.object({ id: KeyIdParameterSchema.meta({ description: 'The key\'s id (a UUID); any other value, or another account\'s key, gets 404.' }) });
