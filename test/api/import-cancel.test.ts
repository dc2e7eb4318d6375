import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cancelFileImport, stagedRow } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { writeFileChunk } from '../../src/worker/write-file-chunk.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { bearer, validListing } from '../support/fixtures.js';
import { stageInChunks, stagedRowsLeft } from '../support/staged-file.js';
import { holdChunkInTransaction } from '../support/hold-in-transaction.js';
import { startTestService, withLateWorker, type TestService } from '../support/test-service.js';

/**
 * Cancelling a file import (docs/imports.md#cancelling-a-file-import): it stops between two
 * chunks, what its chunks wrote stays, what is still staged goes; an import that cannot be
 * cancelled is answered as it is.
 */
describe('POST /v1/api/imports/{id}/cancel', () => {
  let service: TestService;

  beforeAll(async () => {
    // note: no worker, so that no chunk is written but those a test writes itself.
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  const cancel = (key: string, id: string, query = '') => service.request({ method: 'POST', url: `/v1/api/imports/${id}/cancel${query}`, headers: bearer(key) });
  const read = (key: string, id: string) => service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) });

  /** A file import recorded as the upload leaves it: queued, `rows` valid listings staged from position 0, in chunks of 10. */
  async function queuedFile(accountId: string, rows: number): Promise<string> {
    const importId = randomUUID();
    await service.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${importId}, ${accountId}, 'listings', 'cancel-test', ${rows}, 0, 0, '[]', 'queued', 'file', now())`;
      await stageInChunks(tx, importId, Array.from({ length: rows }, (_, index) => stagedRow(index, ListingRowSchema.parse(validListing({ title: `Row ${index}` })))), 10);
    });
    return importId;
  }

  const stagedLeft = (importId: string) => stagedRowsLeft(service.sql, importId);
  const writtenBy = async (importId: string) => (await service.sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`)[0]!.n;
  const stateOf = async (importId: string) => (await service.sql<{ state: string }[]>`select state from imports where job_id = ${importId}`)[0]!.state;

  function expectImport(res: LightMyRequestResponse, expected: Record<string, unknown>): Record<string, unknown> {
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['x-ratelimit-remaining-minute']).toBeDefined();
    expect(res.json()).toMatchObject(expected);
    return res.json();
  }

  it('cancels a queued file import: 200 cancelled, its staging dropped, and a chunk then writes nothing', async () => {
    const { account, key } = await newPartner(service);
    const id = await queuedFile(account.id, 30);

    const res = await cancel(key, id);
    const cancelled = expectImport(res, {
      id,
      source: 'file',
      state: 'cancelled',
      started_at: null,
      finished_at: expect.any(String),
      rows: { received: 30, processed: 0, inserted: 0, updated: 0, unchanged: 0, skipped: 0 },
    });
    expect(await stagedLeft(id)).toBe(0);
    expect(await writeFileChunk(service.sql, id)).toEqual({ state: 'ended' });
    expect(await writtenBy(id)).toBe(0);
    // the answer is the import as GET reads it
    expect((await read(key, id)).json()).toEqual(cancelled);
  });

  it('waits for a chunk held inside its transaction, whose rows then stay, counted; no chunk starts after the answer', async () => {
    const { account, key } = await newPartner(service);
    const id = await queuedFile(account.id, 25);
    expect(await writeFileChunk(service.sql, id)).toMatchObject({ state: 'written', rows: 10 });

    const chunk = holdChunkInTransaction(service.sql, id);
    try {
      await chunk.started;
      let answered = false;
      const cancelling = cancel(key, id).finally(() => (answered = true));
      // the cancel is queued behind the chunk's hold on the import's write lock
      await vi.waitFor(
        async () => {
          const [waiting] = await service.sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory' and query like '%pg_advisory_xact_lock%'`;
          expect(waiting!.n).toBe(1);
        },
        { timeout: 5_000, interval: 20 },
      );
      expect(answered).toBe(false);

      chunk.release();
      expect(await chunk.done).toMatchObject({ state: 'written', rows: 10 });
      expectImport(await cancelling, {
        id,
        state: 'cancelled',
        started_at: expect.any(String),
        finished_at: expect.any(String),
        rows: { received: 25, processed: 20, inserted: 20, updated: 0, unchanged: 0, skipped: 0 },
      });
    } finally {
      chunk.release();
      await chunk.done.catch(() => undefined);
    }
    expect(await writtenBy(id)).toBe(20);
    expect(await stagedLeft(id)).toBe(0);
    expect(await writeFileChunk(service.sql, id)).toEqual({ state: 'ended' });
    expect(await writtenBy(id)).toBe(20);
  });

  it('answers an import that had ended as it is: completed stays completed, a cancelled one keeps its first finished_at', async () => {
    const { account, key } = await newPartner(service);
    const done = await queuedFile(account.id, 5);
    expect(await writeFileChunk(service.sql, done)).toMatchObject({ state: 'written', rows: 5 });
    expect(await writeFileChunk(service.sql, done)).toEqual({ state: 'completed' });
    const completed = (await read(key, done)).json();
    expect(completed).toMatchObject({ state: 'completed', rows: { inserted: 5, processed: 5 } });
    expect((await cancel(key, done)).json()).toEqual(completed);

    const stopped = await queuedFile(account.id, 5);
    const first = (await cancel(key, stopped)).json();
    expect(first).toMatchObject({ state: 'cancelled' });
    const again = await cancel(key, stopped);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first);
  });

  it('answers a bulk request\'s import unchanged: it is written all at once and cannot be cancelled', async () => {
    const { key } = await newPartner(service);
    const created = await withLateWorker(service, () =>
      service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing(), validListing({ currency: 'EUR' })] } }),
    );
    expect(created.statusCode).toBe(201);
    const id = created.json<{ import_id: string }>().import_id;
    const before = (await read(key, id)).json();
    expect(before).toMatchObject({ source: 'request', state: 'completed' });

    const res = await cancel(key, id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(before);
    expect(await stateOf(id)).toBe('completed');
  });

  it('answers 404 "Import not found" for another account\'s import, an unknown id and a malformed one, as GET does, and cancels nothing', async () => {
    const owner = await newPartner(service);
    const stranger = await newPartner(service);
    const id = await queuedFile(owner.account.id, 3);

    const shapes = [];
    for (const probe of [id, randomUUID(), 'not-an-id']) {
      for (const res of [await cancel(stranger.key, probe), await read(stranger.key, probe)]) {
        shapes.push({ status: res.statusCode, body: res.body, headers: Object.keys(res.headers).sort() });
      }
    }
    for (const shape of shapes) expect(shape).toEqual(shapes[0]);
    expect(shapes[0]).toMatchObject({ status: 404, body: JSON.stringify({ error: 'Import not found', code: 'import_not_found' }) });
    expect(await stateOf(id)).toBe('queued');
    expect(await stagedLeft(id)).toBe(3);

    // its owner can
    expectImport(await cancel(owner.key, id), { state: 'cancelled' });
  });

  it('needs listings:write: a key with jobs:read only gets 403 naming listings_write, and cancels nothing', async () => {
    const { account, key } = await newPartner(service);
    const reader = await service.createKey(account, ['jobs:read']);
    const id = await queuedFile(account.id, 3);

    const res = await cancel(reader, id);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Missing required scope: listings_write', code: 'missing_scope' });
    expect(res.headers['x-ratelimit-remaining-minute']).toBeDefined();
    expect(await stateOf(id)).toBe('queued');
    expect(await stagedLeft(id)).toBe(3);

    expectImport(await cancel(key, id), { state: 'cancelled' });
  });

  it('refuses a query parameter with 400, before cancelling anything', async () => {
    const { account, key } = await newPartner(service);
    const id = await queuedFile(account.id, 3);
    const res = await cancel(key, id, '?force=true');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Unknown query parameter: force', code: 'unknown_query_parameter' });
    expect(await stateOf(id)).toBe('queued');

    expectImport(await cancel(key, id), { state: 'cancelled' });
  });
});

describe('cancelFileImport', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('gives up when a chunk holds the import longer than the wait allows, and leaves the import as the chunk made it', async () => {
    const account = await service.createAccount();
    const id = randomUUID();
    await service.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${id}, ${account.id}, 'listings', 'cancel-test', 20, 0, 0, '[]', 'queued', 'file', now())`;
      await stageInChunks(tx, id, Array.from({ length: 20 }, (_, index) => stagedRow(index, ListingRowSchema.parse(validListing()))), 10);
    });

    const chunk = holdChunkInTransaction(service.sql, id);
    try {
      await chunk.started;
      expect(await cancelFileImport(service.sql, account.id, id, { lockTimeoutMs: 100 })).toBe('locked');
    } finally {
      chunk.release();
    }
    expect(await chunk.done).toMatchObject({ state: 'written', rows: 10 });
    const [record] = await service.sql<{ state: string; inserted: number }[]>`select state, inserted from imports where job_id = ${id}`;
    expect(record).toEqual({ state: 'running', inserted: 10 });
    expect(await stagedRowsLeft(service.sql, id)).toBe(10);

    expect(await cancelFileImport(service.sql, account.id, id)).toBe('cancelled');
    expect(await cancelFileImport(service.sql, account.id, id)).toBe('unchanged');
  });
});
