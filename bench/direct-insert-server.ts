import Fastify from 'fastify';
import { bearerToken, hashApiKey } from '../src/shared/access/api-key.js';
import { createSql } from '../src/shared/infra/db.js';
import { IMPORT_KINDS } from '../src/shared/import/import-kinds.js';
import { findActiveKeyByHash } from '../src/shared/repositories/api-keys.js';
import { validateRows } from '../src/shared/rows/validate-rows.js';
import { copyImport, copyRows } from './lib/copy-insert.js';

/**
 * The reference of the `direct` benchmark section (issue 24): the import service a partner would
 * build without a queue. Same body, same row rules, same table as ours; an API key looked up once
 * and cached, the valid rows written with one `COPY` per request, and nothing else: no quota, no
 * lockout, no queue, no import record, no idempotency, no exactly-once.
 *
 * With DIRECT_RECORD_IMPORTS=1 it writes each request's rows in one transaction with a record of
 * the import in `imports` (copyImport: the account read, the record inserted, then the COPY), as a
 * service must to answer a retry exactly once: what exactly-once costs without a queue.
 */

const { maxRows, bodyLimitBytes, rowSchema } = IMPORT_KINDS.listings;
/** note: as long as our key cache keeps an entry; a simple service would not follow revocations. */
const KEY_CACHE_MS = 30_000;

interface CachedKey {
  accountId: string;
  makerName: string;
  makerPhotoUrl: string | null;
  canWrite: boolean;
  until: number;
}

// note: the same pool size as a worker of ours (DATABASE_POOL_MAX's default), and the same
// TCP_NODELAY sockets: without them COPY stalls on delayed ACKs, which would flatter our service.
const sql = createSql({ databaseUrl: process.env.DATABASE_URL!, databasePoolMax: 10 });
const keys = new Map<string, CachedKey>();
const recordImports = process.env.DIRECT_RECORD_IMPORTS === '1';

async function lookUpKey(token: string): Promise<CachedKey | undefined> {
  const hash = hashApiKey(token);
  const cacheKey = hash.toString('base64');
  const cached = keys.get(cacheKey);
  if (cached !== undefined && cached.until > Date.now()) return cached;
  const found = await findActiveKeyByHash(sql, hash);
  if (found === undefined) return undefined;
  const key = {
    accountId: found.account.id,
    makerName: found.account.displayName,
    makerPhotoUrl: found.account.avatarUrl,
    canWrite: found.scopes.includes('listings:write'),
    until: Date.now() + KEY_CACHE_MS,
  };
  keys.set(cacheKey, key);
  return key;
}

const app = Fastify({ logger: false, bodyLimit: bodyLimitBytes });

app.post('/v1/api/listings/bulk', async (request, reply) => {
  const token = bearerToken(request.headers.authorization);
  const key = token === undefined ? undefined : await lookUpKey(token);
  if (key === undefined) return reply.code(401).send({ error: 'invalid API key' });
  if (!key.canWrite) return reply.code(403).send({ error: 'missing scope listings:write' });
  const listings = (request.body as { listings?: unknown } | null)?.listings;
  if (!Array.isArray(listings) || listings.length === 0 || listings.length > maxRows) {
    return reply.code(400).send({ error: `listings must be an array of 1 to ${maxRows} rows` });
  }
  const { rows, errors } = validateRows(rowSchema, listings);
  if (rows.length > 0) {
    if (recordImports) await copyImport(sql, key.accountId, rows);
    else await copyRows(sql, rows, { account_id: key.accountId, import_job_id: null, maker_name: key.makerName, maker_photo_url: key.makerPhotoUrl });
  }
  return reply.code(201).send({ inserted: rows.length, skipped: errors.length, errors });
});

await app.listen({ port: Number(process.env.PORT ?? 3998), host: '127.0.0.1' });
console.log('direct-insert server listening');
