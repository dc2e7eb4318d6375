import type { FastifyInstance } from 'fastify';
import { BULK_KINDS, BULK_KIND_NAMES } from '../../shared/bulk-kinds.js';
import { validateBulkRequest } from '../../shared/bulk-request.js';
import type { ApiDeps } from '../deps.js';
import { parseIdempotencyKey, runIdempotentImport } from '../idempotency.js';
import { apiKeyAuth } from '../plugins/api-key-auth.js';

/**
 * `POST /v1/api/machines/bulk` and `POST /v1/api/listings/bulk` (spec 4.2, 4.3): authenticate
 * (hook, before the body is read), validate every row, hand the valid ones to a worker in one
 * job, await it, reply 201. With an Idempotency-Key a repeat never inserts again.
 */
export async function bulkImportRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  for (const kind of BULK_KIND_NAMES) {
    app.post(
      `/v1/api/${kind}/bulk`,
      {
        bodyLimit: BULK_KINDS[kind].bodyLimitBytes,
        config: { auth: 'api-key', requiredScope: 'listings:write' },
        onRequest: apiKeyAuth(deps),
      },
      async (request, reply) => {
        const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
        const { total, rows, errors } = validateBulkRequest(kind, request.body);
        const data = { kind, accountId: request.apiKey!.account.id, requestId: request.id, total, errors, rows };
        if (idempotencyKey === undefined) return reply.code(201).send(await deps.imports.run(data));
        const { result, replayed } = await runIdempotentImport(deps, data, idempotencyKey, request.rawBody ?? Buffer.alloc(0));
        if (replayed) reply.header('idempotent-replayed', 'true');
        return reply.code(201).send(result);
      },
    );
  }
}
