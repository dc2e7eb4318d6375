import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../shared/api-error.js';
import { generateApiKey } from '../../shared/api-key.js';
import { parseCreateKeyRequest } from '../../shared/key-request.js';
import { isUuid } from '../../shared/repositories/accounts.js';
import { ACTIVE_KEY_CAP, createKeyWithinCap, listKeys, revokeKey } from '../../shared/repositories/api-keys.js';
import { toUnderscoreForm } from '../../shared/scopes.js';
import type { ApiDeps } from '../deps.js';
import { sessionAuth } from '../plugins/session-auth.js';

const SHOWN_ONCE_NOTE =
  'This is the only time the full API key is shown. Store it securely (for example in a secrets manager); it cannot be retrieved again. Only its prefix is kept.';

/** Key management with the session token (spec 4.4, decisions C). */
export async function keyRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { sql } = deps;
  const onRequest = sessionAuth(deps);

  app.get('/v1/api/keys', { onRequest }, async (request) => {
    const keys = await listKeys(sql, request.sessionAccount!.id);
    return { keys };
  });

  app.post('/v1/api/keys', { onRequest, bodyLimit: 16 * 1024 }, async (request, reply) => {
    const { label, scopes } = parseCreateKeyRequest(request.body);
    const generated = generateApiKey();
    const created = await createKeyWithinCap(sql, {
      accountId: request.sessionAccount!.id,
      label,
      scopes,
      keyPrefix: generated.prefix,
      keyHash: generated.hash,
    });
    if (created === 'cap-reached') {
      throw new ApiError(429, { error: `Active key limit reached (${ACTIVE_KEY_CAP}); revoke a key first` });
    }
    return reply.code(201).send({
      key: generated.fullKey,
      metadata: {
        id: created.id,
        label: created.label,
        key_prefix: created.key_prefix,
        scopes: created.scopes.map(toUnderscoreForm),
        created_at: created.created_at,
      },
      note: SHOWN_ONCE_NOTE,
    });
  });

  app.delete<{ Params: { id: string } }>('/v1/api/keys/:id', { onRequest }, async (request) => {
    const { id } = request.params;
    const revoked = isUuid(id) ? await revokeKey(sql, request.sessionAccount!.id, id) : undefined;
    if (!revoked) throw new ApiError(404, { error: 'API key not found' });
    // note: after the commit, before the reply: every replica drops its cached keys, so the
    // revoked key fails on the very next request wherever it lands.
    await deps.authVersion.bump();
    return { revoked: { id: revoked.id, key_prefix: revoked.key_prefix, is_revoked: true } };
  });
}
