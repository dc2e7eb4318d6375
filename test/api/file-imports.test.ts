import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { stagedRowsLeft } from '../support/staged-file.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * `POST /v1/api/imports?kind=...` (docs/imports.md#whole-files): a whole file, checked as it
 * arrives, kept only once it is whole, then written in the background by the workers.
 */
describe('POST /v1/api/imports (whole files)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ACCOUNT_MAX_FILE_IMPORTS: '2', FILE_IMPORT_MAX_BYTES: '200000' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  const ndjson = (rows: object[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';
  const upload = (key: string, kind: string, payload: string | Buffer | Readable, contentType = 'application/x-ndjson', headers: Record<string, string> = {}) =>
    service.request({ method: 'POST', url: `/v1/api/imports?kind=${kind}`, headers: { ...bearer(key), 'content-type': contentType, ...headers }, payload });
  const read = async (key: string, id: string) => (await service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) })).json<{ state: string; rows: Record<string, number>; error_count: number }>();
  const stagedRows = (id: string) => stagedRowsLeft(service.sql, id);
  const importsOf = async (accountId: string) => (await service.sql<{ n: number }[]>`select count(*)::int as n from imports where account_id = ${accountId}`)[0]!.n;

  it('takes an NDJSON file: 202 with the import, its failed rows by position, then the workers write the rest once', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const rows = [
      validListing({ external_id: 'F-1' }),
      validListing({ currency: 'EUR' }),
      validListing({ external_id: 'F-1' }),
      validListing({ external_id: 'F-2' }),
    ];
    const res = await upload(key, 'listings', ndjson(rows) + 'not json\n');
    expect(res.statusCode).toBe(202);
    const { import: created } = res.json<{ import: { id: string; source: string; state: string; rows: Record<string, number>; error_count: number } }>();
    expect(res.headers['location']).toBe(`/v1/api/imports/${created.id}`);
    expect(created).toMatchObject({ source: 'file', state: 'queued', rows: { received: 5, skipped: 3 }, error_count: 3 });

    const errors = await service.request({ method: 'GET', url: `/v1/api/imports/${created.id}/errors`, headers: bearer(key) });
    expect(errors.json<{ data: { index: number; details: { code: string }[] }[] }>().data.map((error) => [error.index, error.details[0]!.code])).toEqual([
      [1, 'not_allowed'],
      [2, 'duplicate_external_id'],
      [4, 'not_an_object'],
    ]);

    await expect.poll(async () => (await read(key, created.id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    expect((await read(key, created.id)).rows).toMatchObject({ received: 5, processed: 5, inserted: 2, skipped: 3 });
    const [written] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where account_id = ${account.id}`;
    expect(written!.n).toBe(2);
    expect(await stagedRows(created.id)).toBe(0);
  });

  it('adds the upload\'s job to the file-imports queue, its id the import\'s; the job ends completed with its progress and a log line per chunk', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const res = await upload(key, 'listings', ndjson([validListing(), validListing(), validListing({ price_cents: 1.5 }), validListing()]));
    expect(res.statusCode).toBe(202);
    const { id } = res.json<{ import: { id: string } }>().import;
    const queue = service.deps.fileImportQueue;
    await expect.poll(() => queue.getJobState(id), { timeout: 15_000, interval: 50 }).toBe('completed');
    const job = (await queue.getJob(id))!;
    expect({ name: job.name, data: job.data, progress: job.progress }).toEqual({ name: 'listings', data: { importId: id }, progress: { processed: 4, total: 4 } });
    expect((await queue.getJobLogs(id)).logs).toEqual(['chunk: 3 rows written (4 of 4)', 'completed: no row left to write']);
    expect((await read(key, id)).state).toBe('completed');
  });

  it('answers 202 when the job cannot be added (Redis away), logs it, and the workers\' fallback still writes the import', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const added = vi.spyOn(service.deps.fileImportQueue, 'add').mockRejectedValueOnce(new Error('Connection is closed.'));
    try {
      const res = await upload(key, 'listings', ndjson([validListing(), validListing()]));
      expect(res.statusCode).toBe(202);
      const { id } = res.json<{ import: { id: string } }>().import;
      expect(added).toHaveBeenCalledOnce();
      expect(service.logs).toContainEqual(expect.objectContaining({ level: 40, jobId: id, msg: 'file import job not added; the workers\' fallback adds it' }));
      await expect.poll(async () => (await read(key, id)).state, { timeout: 20_000, interval: 100 }).toBe('completed');
      expect(await service.deps.fileImportQueue.getJobState(id)).toBe('completed');
    } finally {
      added.mockRestore();
    }
  });

  it('takes a CSV file with the partner CLI\'s columns and array cells', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const machine = validMachine({ capabilities: ['pla', 'petg'] });
    const csv = `template_id,category,manufacturer,model,capabilities\n${machine.template_id},fdm,Prusa Research,MK4,pla|petg\n,fdm,Prusa Research,MK4,\n`;
    const res = await upload(key, 'machines', csv, 'text/csv; charset=utf-8');
    expect(res.statusCode).toBe(202);
    const { import: created } = res.json<{ import: { id: string; rows: Record<string, number> } }>();
    expect(created.rows).toMatchObject({ received: 2, skipped: 1 });
    await expect.poll(async () => (await read(key, created.id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    const [stored] = await service.sql<{ capabilities: string[] }[]>`select capabilities from machines where import_job_id = ${created.id}`;
    expect(stored!.capabilities).toEqual(['pla', 'petg']);
  });

  it.each([
    ['an empty file', '', 'application/x-ndjson', 400, { error: 'The file holds no rows', code: 'file_empty' }],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xc3, 0x28, 0x7d, 0x0a]), 'application/x-ndjson', 400, { error: 'The file is not UTF-8 text', code: 'file_not_utf8' }],
    ['a CSV header naming no field', 'colour,size\nred,3\n', 'text/csv', 400, { error: expect.stringMatching(/^The file cannot be read: the first line must be a header naming listings fields/), code: 'file_unreadable' }],
    ['no valid row', '{"title": ""}\n', 'application/x-ndjson', 400, { error: 'no valid rows', code: 'no_valid_rows', errors: [expect.objectContaining({ index: 0 })] }],
    ['another media type', '{}', 'application/json', 415, { error: 'Content-Type must be application/x-ndjson or text/csv', code: 'unsupported_file_media_type' }],
  ])('refuses %s and keeps nothing', async (_case, payload, contentType, status, body) => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const res = await upload(key, 'listings', payload, contentType);
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual(body);
    expect(await importsOf(account.id)).toBe(0);
  });

  it.each([
    ['declared in Content-Length', false],
    ['streamed without a length', true],
  ])('refuses a file over FILE_IMPORT_MAX_BYTES, %s: 413 with the limit, and keeps nothing', async (_case, streamed) => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const file = ndjson(Array.from({ length: 1_000 }, () => validListing()));
    expect(Buffer.byteLength(file)).toBeGreaterThan(200_000);
    const res = await upload(key, 'listings', streamed ? Readable.from([file]) : file);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: 'Request body too large', code: 'body_too_large', limit_bytes: 200_000 });
    expect(await importsOf(account.id)).toBe(0);
    const [staged] = await service.sql<{ n: number }[]>`select count(*)::int as n from import_file_chunks`;
    expect(staged!.n).toBe(0);
  });

  it.each([
    ['/v1/api/imports?kind=orders', 'kind must be listings or machines', 'invalid_import_kind'],
    ['/v1/api/imports', 'kind must be listings or machines', 'invalid_import_kind'],
    ['/v1/api/imports?kind=listings&dry_run=true', 'Unknown query parameter: dry_run', 'unknown_query_parameter'],
  ])('refuses %s with 400 "%s" (%s)', async (url, error, code) => {
    const { key } = await newPartner(service, { tier: 'global' });
    const res = await service.request({ method: 'POST', url, headers: { ...bearer(key), 'content-type': 'application/x-ndjson' }, payload: ndjson([validListing()]) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error, code });
  });

  it('answers the same import to the same file under the same Idempotency-Key, and 422 to another file', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const file = ndjson([validListing(), validListing()]);
    const first = await upload(key, 'listings', file, 'application/x-ndjson', { 'idempotency-key': 'catalogue-2026-11-25' });
    const again = await upload(key, 'listings', file, 'application/x-ndjson', { 'idempotency-key': 'catalogue-2026-11-25' });
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json<{ import: { id: string } }>().import.id).toBe(first.json<{ import: { id: string } }>().import.id);
    const other = await upload(key, 'listings', ndjson([validListing()]), 'application/x-ndjson', { 'idempotency-key': 'catalogue-2026-11-25' });
    expect(other.statusCode).toBe(422);
    expect(await importsOf(account.id)).toBe(1);
  });

  it('charges the day quota as the bulk requests the file replaces, and the minute once', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const me = async () => (await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).headers;
    const before = await me();
    // 450 listings replace three bulk requests of 200
    const res = await upload(key, 'listings', ndjson(Array.from({ length: 450 }, () => validListing())));
    expect(res.statusCode).toBe(202);
    const after = await me();
    expect(Number(before['x-ratelimit-remaining-day']) - Number(after['x-ratelimit-remaining-day'])).toBe(3 + 1);
    expect(Number(before['x-ratelimit-remaining-minute']) - Number(after['x-ratelimit-remaining-minute'])).toBe(1 + 1);
  });

  it('refuses a file import past ACCOUNT_MAX_FILE_IMPORTS queued or running: 429, before the body is read, and keeps nothing', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    // two file imports of the account still waiting for the workers
    for (let n = 0; n < 2; n += 1) {
      await service.sql`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${crypto.randomUUID()}, ${account.id}, 'listings', 'waiting', 1, 0, 0, '[]', 'running', 'file', now())`;
    }
    const res = await upload(key, 'listings', ndjson([validListing()]));
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Too many file imports in progress', code: 'too_many_file_imports', retry_after_sec: 60 });
    expect(res.headers['retry-after']).toBe('60');
    expect(await importsOf(account.id)).toBe(2);
  });

  /**
   * Runs `upload` with a deferred constraint trigger of the account's acceptance that runs `body`
   * at its COMMIT (a PL/pgSQL statement).
   */
  async function withCommitTrigger<T>(accountId: string, body: string, run: () => Promise<T>): Promise<T> {
    const trigger = `at_commit_${accountId.replaceAll('-', '')}`;
    await service.sql.unsafe(`
      create function ${trigger}() returns trigger language plpgsql as $$ begin ${body}; return null; end $$;
      create constraint trigger ${trigger} after update on imports deferrable initially deferred
        for each row when (new.account_id = '${accountId}' and old.state = 'uploading' and new.state = 'queued') execute function ${trigger}()`);
    try {
      return await run();
    } finally {
      await service.sql.unsafe(`drop trigger ${trigger} on imports; drop function ${trigger}()`);
    }
  }
  /** The day window's count in Redis, as rate-limiter-flexible keeps it. */
  const dayCount = async (accountId: string) => Number(await service.deps.redis.get(`${service.config.redisPrefix}:quota-day:${accountId}`));

  it('answers 503 import_outcome_unknown with Location when the connection goes with the commit that accepts the file, and keeps the day quota charged', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    // note: the session ends during the COMMIT, which the API cannot tell from a commit made
    // whose answer was lost on the way back
    await withCommitTrigger(account.id, 'perform pg_terminate_backend(pg_backend_pid())', async () => {
      const before = await dayCount(account.id);
      const res = await upload(key, 'listings', ndjson(Array.from({ length: 450 }, () => validListing())));
      expect(res.statusCode).toBe(503);
      const body = res.json<{ error: string; code: string; import_id: string; retry_after_sec: number }>();
      expect(body).toMatchObject({ error: 'Import may have been accepted; look it up before sending it again', code: 'import_outcome_unknown' });
      expect(res.headers['location']).toBe(`/v1/api/imports/${body.import_id}`);
      // the request, and the two bulk requests the file replaces beyond it: no refund, it may be kept
      expect(await dayCount(account.id)).toBe(before + 1 + 2);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await dayCount(account.id)).toBe(before + 1 + 2);
      expect(service.logs).toContainEqual(expect.objectContaining({ level: 40, importId: body.import_id, msg: expect.stringMatching(/acceptance's commit was lost/) }));
      // it was not kept here: the look-up says so, and nothing is left staged
      const looked = await service.request({ method: 'GET', url: `/v1/api/imports/${body.import_id}`, headers: bearer(key) });
      expect(looked.statusCode).toBe(404);
      await expect.poll(() => importsOf(account.id), { timeout: 2_000, interval: 50 }).toBe(0);
    });
  });

  it('answers a COMMIT PostgreSQL refuses as a failure that kept nothing, and gives the day charge back', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    await withCommitTrigger(account.id, "raise exception 'refused at commit'", async () => {
      const before = await dayCount(account.id);
      const res = await upload(key, 'listings', ndjson(Array.from({ length: 450 }, () => validListing())));
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ error: 'Internal server error' });
      await expect.poll(() => dayCount(account.id), { timeout: 2_000, interval: 50 }).toBe(before + 1);
      await expect.poll(() => importsOf(account.id), { timeout: 2_000, interval: 50 }).toBe(0);
    });
  });

  it('answers 202 from what the accepting transaction returned: the import as committed, without reading it again', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const reads: string[] = [];
    // note: a read of the import after the commit would be the API's pool's; none is made
    const spy = vi.spyOn(service.deps.sql, 'unsafe');
    try {
      const res = await upload(key, 'listings', ndjson([validListing(), validListing({ currency: 'EUR' })]));
      expect(res.statusCode).toBe(202);
      expect(res.json<{ import: Record<string, unknown> }>().import).toMatchObject({ state: 'queued', rows: { received: 2, processed: 1, skipped: 1 }, error_count: 1 });
      reads.push(...spy.mock.calls.map((call) => String(call[0])));
    } finally {
      spy.mockRestore();
    }
    expect(reads).toEqual([]);
  });
});
