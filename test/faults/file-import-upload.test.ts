import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { peakRssMb } from '../support/processes.js';
import { listingLine, uploadNdjson } from '../support/ndjson-upload.js';
import { rawRequest, requestHead } from '../support/raw-http.js';

/**
 * Uploading a whole file to a real API process (docs/imports.md#whole-files): the API never holds the file
 * whole, and an API that dies mid-upload keeps nothing, so that the retry with the same
 * Idempotency-Key imports the file once.
 */
describe('file imports while they are uploaded', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });


  async function counts(s: FaultScenario) {
    const [row] = await s.sql<{ imports: number; staged: number; errors: number }[]>`
      select (select count(*)::int from imports) as imports, (select coalesce(sum(rows), 0)::int from import_file_chunks) as staged,
             (select count(*)::int from import_file_errors) as errors`;
    return row!;
  }

  it('takes a 100 MB file without holding it: the API stays under 300 MB of resident memory', async () => {
    scenario = await createFaultScenario();
    // note: the V8 young generation the image gives every process (Dockerfile, docs/operators.md)
    const api = await scenario.startApi({ NODE_OPTIONS: '--max-semi-space-size=4' });
    const atStart = peakRssMb(api.child.pid!);
    // just under FILE_IMPORT_MAX_BYTES (100 MiB): 440,000 rows of about 225 bytes
    const rows = 440_000;
    let bytes = 0;
    const res = await uploadNdjson(api.baseUrl, scenario.apiKey, rows, { onSent: (sent) => (bytes = sent) });
    expect(bytes).toBeGreaterThan(95 * 1024 * 1024);
    expect(res.status, res.body).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ import: { source: 'file', state: 'queued', rows: { received: rows, skipped: 0 } } });
    const peak = peakRssMb(api.child.pid!);
    console.log(`file import of ${rows} rows, ${Math.round(bytes / 1024 / 1024)} MiB: API peak resident memory ${peak} MB (${atStart} MB once started)`);
    expect(peak).toBeLessThan(300);
    expect(await counts(scenario)).toMatchObject({ imports: 1, staged: rows });
    const [space] = await scenario.sql<{ mb: number }[]>`
      select round((pg_total_relation_size('import_file_chunks') + pg_total_relation_size('import_file_external_ids')) / 1048576.0) as mb`;
    console.log(`staged in PostgreSQL: ${space!.mb} MB (chunks and claimed ids, with their indexes) for a ${Math.round(bytes / 1024 / 1024)} MiB file`);
  }, 240_000);

  it('keeps nothing visible of an upload whose API dies mid-way, and the workers sweep what it staged; the retry with the same Idempotency-Key imports the file once', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const rows = 60_000;
    // the API is SIGKILLed once it has staged some of the file
    const interrupted = uploadNdjson(api.baseUrl, s.apiKey, rows, { idempotencyKey: 'catalogue-1' });
    interrupted.catch(() => undefined);
    await expect.poll(async () => (await counts(s)).staged, { timeout: 20_000, interval: 20 }).toBeGreaterThan(0);
    api.child.kill('SIGKILL');
    await expect(interrupted).rejects.toThrow();
    await api.exited;
    // what it staged waits, `uploading`, seen by nobody, until the sweep finds its process gone
    const [left] = await s.sql<{ visible: number; uploading: number }[]>`
      select count(*) filter (where state <> 'uploading')::int as visible, count(*) filter (where state = 'uploading')::int as uploading from imports`;
    expect(left).toEqual({ visible: 0, uploading: 1 });
    const [claims] = await s.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
    expect(claims!.n).toBe(0);

    const again = await s.startApi();
    await s.startWorker();
    const listed = await fetch(`${again.baseUrl}/v1/api/imports`, { headers: { authorization: `Bearer ${s.apiKey}` } });
    expect(await listed.json()).toEqual({ data: [], has_more: false });
    const retried = await uploadNdjson(again.baseUrl, s.apiKey, rows, { idempotencyKey: 'catalogue-1' });
    expect(retried.status, retried.body).toBe(202);
    const { import: accepted } = JSON.parse(retried.body) as { import: { id: string } };
    await expect
      .poll(async () => (await s.sql<{ state: string }[]>`select state from imports where job_id = ${accepted.id}`)[0]?.state, { timeout: 90_000, interval: 200 })
      .toBe('completed');
    const [written] = await s.sql<{ rows: number; distinct_ids: number }[]>`
      select count(*)::int as rows, count(distinct external_id)::int as distinct_ids from listings`;
    expect(written).toEqual({ rows, distinct_ids: rows });
    // note: abandoned once its process has not been heard of for 30 s; the workers look every 10 s
    await expect.poll(() => counts(s), { timeout: 60_000, interval: 500 }).toMatchObject({ imports: 1, staged: 0, errors: 0 });
  }, 240_000);

  it('takes FILE_IMPORT_MAX_BYTES and ACCOUNT_MAX_FILE_IMPORTS from the API process\'s environment', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    // note: no worker, so an accepted file import stays queued and counts against the limit
    const api = await s.startApi({ FILE_IMPORT_MAX_BYTES: '20000', ACCOUNT_MAX_FILE_IMPORTS: '1' });

    // 100 lines of about 225 bytes: past the 20,000 bytes set, streamed without a declared length
    const tooLarge = await uploadNdjson(api.baseUrl, s.apiKey, 100);
    expect(tooLarge.status, tooLarge.body).toBe(413);
    expect(JSON.parse(tooLarge.body)).toMatchObject({ error: 'Request body too large', limit_bytes: 20_000 });
    expect(await counts(s)).toEqual({ imports: 0, staged: 0, errors: 0 });

    const first = await uploadNdjson(api.baseUrl, s.apiKey, 20);
    expect(first.status, first.body).toBe(202);
    const second = await uploadNdjson(api.baseUrl, s.apiKey, 20, { line: (n) => listingLine(n + 20) });
    expect(second.status, second.body).toBe(429);
    expect(JSON.parse(second.body)).toMatchObject({ error: 'Too many file imports in progress' });
    expect(await counts(s)).toMatchObject({ imports: 1, staged: 20 });
  }, 60_000);

  it('gives a file upload FILE_UPLOAD_TIMEOUT_MS and every other request REQUEST_TIMEOUT_MS, as set in the API process\'s environment', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi({ REQUEST_TIMEOUT_MS: '1000', FILE_UPLOAD_TIMEOUT_MS: '8000' });
    const port = Number(new URL(api.baseUrl).port);
    const head = (path: string, type: string, length: number) =>
      requestHead('POST', path, { authorization: `Bearer ${scenario!.apiKey}`, 'content-type': type, connection: 'close' }, length);

    // a file whose 20 lines come one every 150 ms: 3 s, three times REQUEST_TIMEOUT_MS
    const lines = Array.from({ length: 20 }, (_, n) => listingLine(n));
    const file = await rawRequest(port, { text: head('/v1/api/imports?kind=listings', 'application/x-ndjson', lines.join('').length), trickle: lines, trickleEveryMs: 150, waitMs: 10_000 });
    expect(file.status, file.body).toBe(202);
    expect(JSON.parse(file.body)).toMatchObject({ import: { source: 'file', rows: { received: 20 } } });

    // a bulk request's body coming as slowly: 408 once REQUEST_TIMEOUT_MS has passed
    const body = JSON.stringify({ listings: [JSON.parse(listingLine(0)) as unknown] });
    const bulk = await rawRequest(port, { text: head('/v1/api/listings/bulk', 'application/json', body.length), trickle: body.match(/.{1,10}/g)!, trickleEveryMs: 150, waitMs: 6_000 });
    expect(bulk.status).toBe(408);
    expect(JSON.parse(bulk.body)).toEqual({ error: 'Request timeout', code: 'request_timeout' });
    expect(bulk.closedAfterMs!).toBeLessThan(4_000);
  }, 60_000);
});
