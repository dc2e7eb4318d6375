import { afterEach, describe, expect, it } from 'vitest';
import { validListing } from '../support/fixtures.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { peakRssMb } from '../support/processes.js';
import { listingLine } from '../support/ndjson-upload.js';
import { repeatedBytes, streamedUpload, type BodyPiece } from '../support/streamed-upload.js';

/**
 * The file door against a real API process (docs/imports.md#whole-files): whatever one upload or
 * a dozen send, or stop sending, the process stays within its memory, every other partner is
 * served, and a refusal is answered when it is decided.
 */
describe('file uploads, hostile and slow, against the API process', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });


  const uploadHeaders = (apiKey: string, contentType: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${apiKey}`, 'content-type': contentType, ...extra });
  const uploadUrl = (baseUrl: string, kind = 'listings') => `${baseUrl}/v1/api/imports?kind=${kind}`;
  const json = <T>(text: string) => JSON.parse(text) as T;

  async function uploadsKept(s: FaultScenario) {
    const [row] = await s.sql<{ imports: number; staged: number; errors: number }[]>`
      select (select count(*)::int from imports where source = 'file') as imports, (select coalesce(sum(rows), 0)::int from import_file_chunks) as staged,
             (select count(*)::int from import_file_errors) as errors`;
    return row!;
  }

  /**
   * Another partner's requests, one every `everyMs` until stopped: a one-row import, the import
   * list and a `/me`, each with a client timeout; what each answered, and how long it took.
   */
  function keepServing(baseUrl: string, apiKey: string, everyMs = 250) {
    const answers: { what: string; status: number; ms: number }[] = [];
    let running = true;
    const call = async (what: string, path: string, init: RequestInit = {}) => {
      const started = Date.now();
      const status = await fetch(`${baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, signal: AbortSignal.timeout(8_000) }).then(
        (res) => res.status,
        () => 0,
      );
      answers.push({ what, status, ms: Date.now() - started });
    };
    const loop = (async () => {
      for (let round = 0; running && round < 2_000; round += 1) {
        await call('import', '/v1/api/listings/bulk', { method: 'POST', body: JSON.stringify({ listings: [validListing()] }) });
        await call('list', '/v1/api/imports?limit=5');
        await call('me', '/v1/api/me');
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    })();
    return {
      answers,
      async stop() {
        running = false;
        await loop;
        return answers;
      },
    };
  }

  it('takes a 95 MB NDJSON line and a 95 MB CSV record without growing: under 300 MB resident, alive, another partner served throughout', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi({ NODE_OPTIONS: '--max-semi-space-size=4' });
    await s.startWorker();
    const other = await s.addPartner();
    const serving = keepServing(api.baseUrl, other.apiKey);

    // one line of `[{},{},...]`: 95 MB before its line break
    const line = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(s.apiKey, 'application/x-ndjson'), [
      '{"title":[',
      ...repeatedBytes('{},', 95 * 1024 * 1024),
      '{}]}\n',
    ]);
    expect(line.status, line.body).toBe(400);
    expect(json<{ error: string; errors: { index: number; reason: string }[] }>(line.body)).toMatchObject({
      error: 'no valid rows',
      errors: [{ index: 0, reason: 'line longer than 1048576 bytes' }],
    });

    // one CSV record of 95 million commas: refused once it passes the row bound, the rest unsent
    const total = 95 * 1024 * 1024;
    const record = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(s.apiKey, 'text/csv'), ['title,price_cents\n', ...repeatedBytes(',', total)]);
    expect(record.status, record.body).toBe(400);
    expect(json<{ code: string; error: string }>(record.body)).toEqual({
      code: 'file_unreadable',
      error: 'The file cannot be read: a CSV record longer than 1048576 bytes starts on line 2',
    });
    expect(record.headers.connection).toBe('close');
    // note: the bytes sent by the time the client reads the answer depend on how fast loopback
    // drains during the linger (LINGER_MS), a matter of timing; what is certain is that the client
    // was answered before it had sent the whole body
    expect(record.bodyComplete).toBe(false);
    console.log(`95 MB CSV record: answered after ${(record.sentAtAnswer / 1024 / 1024).toFixed(1)} MB sent`);

    const answers = await serving.stop();
    const peak = peakRssMb(api.child.pid!);
    console.log(`hostile uploads: API peak resident memory ${peak} MB; ${answers.length} requests of another partner meanwhile, slowest ${Math.max(...answers.map((a) => a.ms))} ms`);
    expect(peak).toBeLessThan(300);
    expect(api.child.exitCode).toBeNull();
    expect(answers.length).toBeGreaterThan(3);
    expect(answers.filter((answer) => answer.status !== (answer.what === 'import' ? 201 : 200))).toEqual([]);
    expect(await uploadsKept(s)).toEqual({ imports: 0, staged: 0, errors: 0 });
  }, 240_000);

  it('receives twelve slow uploads beside every other partner\'s requests that need PostgreSQL; the next upload of a full account is 429 and of a full process 503, at once', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    // note: twelve uploads fill the process's slots; DATABASE_POOL_MAX stays 10, fewer than the
    // uploads, and one connection stages them all
    const api = await s.startApi({ FILE_UPLOADS_PER_PROCESS: '12', FILE_UPLOAD_POOL_MAX: '1' });
    await s.startWorker();
    const senders = await Promise.all(Array.from({ length: 6 }, (_, n) => s.addPartner(`Slow Sender ${n}`)));
    const rowsEach = 12;
    const slowFile = (first: number): BodyPiece[] => Array.from({ length: rowsEach }, (_, n) => [listingLine(first + n), { pauseMs: 1_000 }]).flat();
    const slow = senders.flatMap((sender, n) => [0, 1].map((m) => streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(sender.apiKey, 'application/x-ndjson'), slowFile((n * 2 + m) * 1_000), { closeWaitMs: 0 })));
    // every slow upload has begun (its import recorded `uploading`)
    await expect.poll(async () => (await s.sql<{ n: number }[]>`select count(*)::int as n from imports where state = 'uploading'`)[0]!.n, { timeout: 10_000, interval: 100 }).toBe(12);

    const other = await s.addPartner();
    const serving = keepServing(api.baseUrl, other.apiKey, 500);
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const fullAccount = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(senders[0]!.apiKey, 'application/x-ndjson'), [listingLine(99_001), { pauseMs: 5_000 }, listingLine(99_002)]);
    const fullProcess = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(other.apiKey, 'application/x-ndjson'), [listingLine(99_003), { pauseMs: 5_000 }, listingLine(99_004)]);
    const answers = await serving.stop();

    expect(fullAccount.status, fullAccount.body).toBe(429);
    expect(json<{ code: string }>(fullAccount.body).code).toBe('too_many_file_imports');
    expect(fullAccount.bodyComplete).toBe(false);
    expect(fullProcess.status, fullProcess.body).toBe(503);
    expect(json<{ code: string }>(fullProcess.body).code).toBe('overloaded');
    expect(fullProcess.bodyComplete).toBe(false);
    console.log(`beside 12 slow uploads: ${answers.length} requests of another partner, slowest ${Math.max(...answers.map((a) => a.ms))} ms`);
    expect(answers.length).toBeGreaterThan(6);
    expect(answers.filter((answer) => answer.status !== (answer.what === 'import' ? 201 : 200))).toEqual([]);

    const accepted = await Promise.all(slow);
    expect(accepted.map((answer) => answer.status)).toEqual(Array(12).fill(202));
    await expect
      .poll(async () => (await s.sql<{ n: number }[]>`select count(*)::int as n from imports where source = 'file' and state = 'completed'`)[0]!.n, { timeout: 60_000, interval: 250 })
      .toBe(12);
    const [written] = await s.sql<{ rows: number; ids: number }[]>`
      select count(*)::int as rows, count(distinct external_id)::int as ids from listings where account_id = any(${senders.map((sender) => sender.accountId)}::uuid[])`;
    expect(written).toEqual({ rows: 12 * rowsEach, ids: 12 * rowsEach });
  }, 120_000);

  it.each([
    ['a CSV header that names no field', 'text/csv', ['Title,Price\n', 'Lamp,12\n'], 400, 'file_unreadable'],
    ['a CSV syntax error', 'text/csv', ['title,price_cents\n', 'Lamp,12\n', 'La"mp,12\n'], 400, 'file_unreadable'],
    ['bytes that are not UTF-8', 'application/x-ndjson', [listingLine(1), Buffer.from([0xff, 0xfe, 0x0a])], 400, 'file_not_utf8'],
    ['a CSV record past 1 MiB', 'text/csv', ['title,price_cents\n', `"${'x'.repeat(1_100_000)}`], 400, 'file_unreadable'],
    ['a file past FILE_IMPORT_MAX_BYTES', 'application/x-ndjson', [...repeatedBytes(listingLine(7), 2_100_000)], 413, 'body_too_large'],
  ])('answers %s when it is read, while the client still holds its body, and closes the connection', async (_what, contentType, cause, status, code) => {
    scenario ??= await createFaultScenario();
    const s = scenario;
    const api = await s.startApi({ FILE_IMPORT_MAX_BYTES: '2000000' });
    // the cause, then the client holds the rest of a 30 MB file back for 20 s
    const answer = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(s.apiKey, contentType), [...cause, { pauseMs: 20_000 }, ...repeatedBytes(listingLine(8), 30 * 1024 * 1024)]);
    expect(answer.status, answer.body).toBe(status);
    expect(json<{ code: string }>(answer.body).code).toBe(code);
    expect(answer.bodyComplete).toBe(false);
    expect(answer.answeredAfterLastByteMs).toBeLessThan(1_000);
    expect(answer.headers.connection).toBe('close');
    expect(answer.closedAfterAnswerMs).toBeDefined();
    await expect.poll(() => uploadsKept(s), { timeout: 5_000, interval: 100 }).toEqual({ imports: 0, staged: 0, errors: 0 });
  }, 60_000);

  it('answers the 1,000,001st row at once, while the client still holds the rest', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const machine = '{"template_id":"t","category":"c","manufacturer":"m","model":"x"}\n';
    const answer = await streamedUpload(uploadUrl(api.baseUrl, 'machines'), uploadHeaders(s.apiKey, 'application/x-ndjson'), [
      ...repeatedBytes(machine, machine.length * 1_000_001),
      { pauseMs: 30_000 },
      machine,
    ]);
    expect(answer.status, answer.body).toBe(400);
    expect(json<{ error: string }>(answer.body).error).toBe('Too many rows: at most 1000000 per file');
    expect(answer.bodyComplete).toBe(false);
    // note: counted from the client's last write, the API still reads (and checks, and stages) the
    // rows the sockets' buffers hold, some MB, before it meets the row; 30 s is what it would wait.
    expect(answer.answeredAfterLastByteMs).toBeLessThan(5_000);
    await expect.poll(() => uploadsKept(s), { timeout: 30_000, interval: 250 }).toEqual({ imports: 0, staged: 0, errors: 0 });
  }, 240_000);

  it('replays an upload whose 202 was lost when the account is at its file-import cap; another file with its key is 422, a new upload 429', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    // note: no worker: the accepted import stays queued and holds the account's one place
    const api = await s.startApi({ ACCOUNT_MAX_FILE_IMPORTS: '1' });
    const file = [listingLine(1), listingLine(2)];
    const send = (key: string | undefined, lines = file) =>
      streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(s.apiKey, 'application/x-ndjson', key === undefined ? {} : { 'idempotency-key': key }), lines);
    const first = await send('nightly-1');
    expect(first.status, first.body).toBe(202);
    const lost = json<{ import: { id: string } }>(first.body).import;

    const retried = await send('nightly-1');
    expect(retried.status, retried.body).toBe(202);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.headers.location).toBe(`/v1/api/imports/${lost.id}`);
    expect(json<{ import: { id: string; state: string } }>(retried.body).import).toMatchObject({ id: lost.id, state: 'queued' });

    const otherFile = await send('nightly-1', [listingLine(3)]);
    expect(otherFile.status, otherFile.body).toBe(422);
    const fresh = await send(undefined, [listingLine(4)]);
    expect(fresh.status, fresh.body).toBe(429);
    expect(await uploadsKept(s)).toMatchObject({ imports: 1, staged: 2 });
  }, 60_000);

  it('refuses to keep an upload whose key was revoked while it was sent: 401, nothing kept', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const partner = await s.addPartner();
    const upload = streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(partner.apiKey, 'application/x-ndjson'), [listingLine(1), { pauseMs: 2_000 }, listingLine(2)]);
    await expect.poll(async () => (await s.sql<{ n: number }[]>`select count(*)::int as n from imports where state = 'uploading'`)[0]!.n, { timeout: 5_000, interval: 50 }).toBe(1);
    const revoked = await fetch(`${api.baseUrl}/v1/api/keys/${partner.keyId}`, { method: 'DELETE', headers: { authorization: `Bearer ${partner.sessionToken}` } });
    expect(revoked.status).toBe(200);
    const answer = await upload;
    expect(answer.status, answer.body).toBe(401);
    expect(json<{ error: string }>(answer.body).error).toBe('Invalid API key');
    await expect.poll(() => uploadsKept(s), { timeout: 5_000, interval: 100 }).toEqual({ imports: 0, staged: 0, errors: 0 });
  }, 60_000);

  it('answers NUL ids and long, bidirectional texts from outside as the error catalogue says, bounded', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const get = (path: string) => fetch(`${api.baseUrl}${path}`, { headers: { authorization: `Bearer ${s.apiKey}` } });
    for (const path of ['/v1/api/imports/%00', '/v1/api/imports/%00/errors']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'Import not found', code: 'import_not_found' });
    }
    expect((await get('/v1/api/imports?starting_after=%00')).status).toBe(400);

    const header = Array.from({ length: 100_000 }, (_, n) => `col\u202e${n}`).join(',');
    const answer = await streamedUpload(uploadUrl(api.baseUrl), uploadHeaders(s.apiKey, 'text/csv'), [`${header}\nLamp,12\n`]);
    expect(answer.status).toBe(400);
    expect(answer.body.length).toBeLessThan(1_024);
    expect(answer.body).not.toContain('\u202e');
  }, 60_000);
});
