import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, createClient, WaitTooLongError, WatchDeadlineError, type BulkImportClient, type ClientOptions, type MergeRowInputs, type RowInputs } from '@bulk-import/client';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { validListing } from '../support/fixtures.js';
import { startCliService, type CliService } from '../support/cli-service.js';
import { documentValidator, pointer, requestValidator, type SentRequest } from '../support/openapi-validator.js';
import type { TestAccount } from '../support/test-service.js';

type Listing = RowInputs['listings'];

/** A listing as a partner's own code types it: the document's row schema, which the suite's valid listing fits. */
const listing = (externalId: string): Listing => validListing({ external_id: externalId });

/** A row the server skips: a typed input cannot say EUR, a partner's data can. */
const inEuros = (externalId: string) => ({ ...listing(externalId), currency: 'EUR' }) as unknown as Listing;

const HEADER = 'external_id,title,description,price_cents,currency,category,material,photo_urls';
const csvLine = (id: string, currency = 'USD') => `${id},Lamp ${id},A fine print,2500,${currency},home_decor,PLA,https://cdn.example.test/${id}.jpg`;

const STREAMED = '(a streamed file)';

/** One request the package sent and the answer it got, as a gateway in front of the service would see them. */
interface Exchange {
  request: SentRequest;
  status: number;
  contentType: string;
  body: Promise<string>;
}

/**
 * A fetch that records every exchange on its way through. note: a streamed body (a file) is
 * recorded as a marker, not read: its bytes are the file's, which the file import's own tests check.
 */
function witnessFetch(exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(input instanceof URL ? input.href : typeof input === 'string' ? input : input.url);
    exchanges.push({
      request: { method: init?.method ?? 'GET', url: `${url.pathname}${url.search}`, headers: { ...(init?.headers as Record<string, string>) }, body: typeof init?.body === 'string' ? init.body : init?.body ? STREAMED : undefined },
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      body: res.clone().text(),
    });
    return res;
  };
}

/**
 * The partner path through @bulk-import/client against the real API (listening on a loopback
 * port) and the real worker: what the package's README promises, end to end.
 */
describe('@bulk-import/client against the service', () => {
  let cli: CliService;
  let worker: RunningWorker | undefined;
  const exchanges: Exchange[] = [];
  const witness = witnessFetch(exchanges);

  beforeAll(async () => {
    // note: started without its worker, so that the cancel test finds its import still queued;
    // the worker starts right after it.
    cli = await startCliService('bulk-import-client-', { worker: false });
  });
  afterAll(async () => {
    await worker?.close();
    await cli?.close();
  });

  /** A client of a new partner's key; `sleeps` records the waits instead of waiting them. */
  async function partnerClient(options: Partial<ClientOptions> = {}): Promise<{ client: BulkImportClient; account: TestAccount; sleeps: number[] }> {
    const { account, key } = await newPartner(cli.service);
    const sleeps: number[] = [];
    const client = createClient({ baseUrl: cli.baseUrl, apiKey: key, fetch: witness, retry: { sleep: async (ms) => void sleeps.push(ms) }, ...options });
    return { client, account, sleeps };
  }

  it('a watch that outlasts its deadline is a WatchDeadlineError; a queued file import cancelled reads cancelled, and so does a second cancel', async () => {
    let clock = 0;
    const { client } = await partnerClient({ retry: { now: () => clock, sleep: async (ms) => void (clock += ms) } });
    const accepted = await client.importFile({ kind: 'listings', contentType: 'text/csv', body: Readable.from([`${HEADER}\n${csvLine('C-1')}\n`]) });
    expect(accepted.import.state).toBe('queued');
    const reads: string[] = [];
    const watched = await client.watchImport(accepted.import.id, { timeoutMs: 5_000, onRead: (found) => void reads.push(found.state) }).catch((caught: unknown) => caught);
    expect(watched).toBeInstanceOf(WatchDeadlineError);
    expect(watched).toMatchObject({ importId: accepted.import.id, lastState: 'queued' });
    // note: reads at 0, 1, 3 and 5 s: the waits double and the last one ends at the deadline
    expect({ reads, clock }).toEqual({ reads: ['queued', 'queued', 'queued', 'queued'], clock: 5_000 });
    expect((await client.cancelImport(accepted.import.id)).state).toBe('cancelled');
    expect((await client.cancelImport(accepted.import.id)).state).toBe('cancelled');
    worker = await startWorker(cli.service.config, cli.service.deps.log.child({ part: 'worker' }));
  });

  it('watching an id that is no import of the account is an ApiError 404 at once', async () => {
    const { client } = await partnerClient();
    await expect(client.watchImport(crypto.randomUUID())).rejects.toMatchObject({ name: 'ApiError', status: 404 });
  });

  it('me: the account of the key', async () => {
    const { client, account } = await partnerClient();
    expect(await client.me()).toMatchObject({ id: account.id, key: { scopes: ['listings:write'] } });
  });

  it('imports rows with some bad ones: the good are in, the bad listed; the same key again is a replay with the same Location', async () => {
    const { client } = await partnerClient();
    const rows = [listing('P-1'), inEuros('P-2'), listing('P-3')];
    const first = await client.importRows('listings', rows);
    expect(first.body).toMatchObject({ inserted: 2, skipped: 1, errors: [{ index: 1, external_id: 'P-2' }] });
    expect(first.location).toBe(`/v1/api/imports/${first.body.import_id}`);
    expect(first.replayed).toBe(false);
    expect(first.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);

    const again = await client.importRows('listings', rows, { idempotencyKey: first.idempotencyKey });
    expect(again).toMatchObject({ replayed: true, location: first.location, body: { import_id: first.body.import_id, inserted: 2 } });

    const dry = await client.importRows('listings', [listing('P-4')], { dryRun: true });
    expect(dry.body).toMatchObject({ dry_run: true });
  });

  it('a refused import is an ApiError with its status, code and body', async () => {
    const { client } = await partnerClient();
    const error = await client.importRows('listings', [inEuros('R-1')]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'no_valid_rows', body: { errors: [{ index: 0 }] } });
  });

  /** Two file imports of the account in progress: a third is answered 429 with Retry-After 60. */
  async function fillFileImportSlots(account: TestAccount): Promise<string[]> {
    const jobs = [crypto.randomUUID(), crypto.randomUUID()];
    for (const job of jobs) {
      await cli.service.sql`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${job}, ${account.id}, 'listings', 'waiting', 1, 0, 0, '[]', 'running', 'file', now())`;
    }
    return jobs;
  }

  it('waits out a 429 whose Retry-After is within maxWaitMs, then imports the file sent again from its start', async () => {
    const { account, key } = await newPartner(cli.service);
    const jobs = await fillFileImportSlots(account);
    const sleeps: number[] = [];
    const client = createClient({
      baseUrl: cli.baseUrl,
      apiKey: key,
      fetch: witness,
      retry: {
        maxWaitMs: 120_000,
        // note: the wait is recorded, and the imports in progress end during it, as they would.
        sleep: async (ms) => {
          sleeps.push(ms);
          await cli.service.sql`update imports set state = 'completed', finished_at = now() where job_id = any(${jobs})`;
        },
      },
    });
    let opened = 0;
    const accepted = await client.importFile({
      kind: 'listings',
      contentType: 'text/csv',
      body: () => {
        opened += 1;
        return Readable.from([`${HEADER}\n`, `${csvLine('W-1')}\n`]);
      },
    });
    expect(sleeps).toEqual([60_000]);
    expect(opened).toBe(2);
    expect((await client.watchImport(accepted.import.id, { pollMs: 200 })).state).toBe('completed');
  });

  it('refuses a 429 whose Retry-After is past maxWaitMs with a WaitTooLongError carrying the wait', async () => {
    const { account, key } = await newPartner(cli.service);
    await fillFileImportSlots(account);
    const client = createClient({ baseUrl: cli.baseUrl, apiKey: key, fetch: witness, retry: { maxWaitMs: 30_000, sleep: async () => {} } });
    const error = await client.importFile({ kind: 'listings', contentType: 'text/csv', body: () => Readable.from([`${HEADER}\n${csvLine('X-1')}\n`]) }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WaitTooLongError);
    expect(error).toMatchObject({ status: 429, waitMs: 60_000, allowedMs: 30_000 });
  });

  it('imports a file from a stream, watches it to its end and reads its failed rows back', async () => {
    const { client } = await partnerClient();
    const reads: string[] = [];
    const lines = [HEADER, csvLine('F-1'), csvLine('F-2', 'EUR'), csvLine('F-3'), csvLine('F-4', 'GBP')];
    const accepted = await client.importFile({ kind: 'listings', contentType: 'text/csv', body: Readable.from(lines.map((line) => `${line}\n`)) });
    expect(accepted).toMatchObject({ replayed: false, location: `/v1/api/imports/${accepted.import.id}` });
    const ended = await client.watchImport(accepted.import.id, { pollMs: 200, onRead: (found) => void reads.push(found.state) });
    expect(ended).toMatchObject({ state: 'completed', rows: { received: 4, inserted: 2, skipped: 2 } });
    expect(reads.at(-1)).toBe('completed');

    const failed = [];
    for await (const row of client.importErrors(accepted.import.id, { pageSize: 1 })) failed.push(row);
    expect(failed.map((row) => [row.index, row.reason])).toEqual([[1, expect.stringContaining('currency')], [3, expect.stringContaining('currency')]]);

    const listed = [];
    for await (const found of client.listImports({ pageSize: 1 })) listed.push(found.id);
    expect(listed).toEqual([accepted.import.id]);
  });

  it('lists the rows back page by page, in id order, one page fetched at a time', async () => {
    let gets = 0;
    const countingFetch: typeof fetch = async (input, init) => {
      if (init?.method === 'GET') gets += 1;
      return witness(input, init);
    };
    const { client } = await partnerClient({ fetch: countingFetch });
    const rows = ['L-1', 'L-2', 'L-3', 'L-4', 'L-5'].map(listing);
    await client.importRows('listings', rows);
    const seen: { id: string; externalId: string | null }[] = [];
    for await (const row of client.listRows('listings', { pageSize: 2 })) seen.push({ id: row.id, externalId: row.external_id });
    // note: id order, which is creation order across imports (the rows of one are written together)
    expect(seen.map((row) => row.id)).toEqual(seen.map((row) => row.id).sort());
    expect(seen.map((row) => row.externalId).sort()).toEqual(['L-1', 'L-2', 'L-3', 'L-4', 'L-5']);
    expect(gets).toBe(3);
  });

  it('merges rows typed as merge rows: only the fields sent change, null clears one, and a dry run of a merge writes nothing', async () => {
    const { client } = await partnerClient();
    const [first, second] = [{ ...listing('M-1'), color: 'teal' }, listing('M-2')];
    await client.importRows('listings', [first, second]);
    // note: typed by the package's MergeRowInputs: an external_id and the fields to change, no cast
    const price: MergeRowInputs['listings'] = { external_id: 'M-1', price_cents: 4_242, color: null };
    const dry = await client.importRows('listings', [{ external_id: 'M-2', title: 'Not written' }], { update: 'merge', dryRun: true });
    expect(dry.body).toMatchObject({ dry_run: true, updated: 1, inserted: 0 });
    const merged = await client.importRows('listings', [price, { external_id: 'M-3' }], { update: 'merge' });
    expect(merged.body).toMatchObject({ inserted: 0, updated: 1, skipped: 1, errors: [{ index: 1 }] });
    const stored = new Map<string | null, { title: string; price_cents: number; color: string | null }>();
    for await (const row of client.listRows('listings')) stored.set(row.external_id, row);
    expect(stored.get('M-1')).toMatchObject({ title: first.title, price_cents: 4_242, color: null });
    expect(stored.get('M-2')).toMatchObject({ title: second.title });
  });

  it('archives rows by external_id: they leave the active list and are listed as archived', async () => {
    const { client } = await partnerClient();
    await client.importRows('listings', [listing('A-1'), listing('A-2')]);
    const archived = await client.archiveRows('listings', { external_ids: ['A-1', 'A-404'] });
    expect(archived.body).toMatchObject({ archived: 1, skipped: 1, errors: [{ index: 1, external_id: 'A-404' }] });
    expect(archived.replayed).toBe(false);
    const active = [];
    for await (const row of client.listRows('listings')) active.push(row.external_id);
    const gone = [];
    for await (const row of client.listRows('listings', { archived: true })) gone.push(row.external_id);
    expect({ active, gone }).toEqual({ active: ['A-2'], gone: ['A-1'] });
  });
  it('every request it sent that was answered 2xx passes the document\'s request validation, and every answer fits the document', async () => {
    const doc: unknown = (await cli.service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    const ajv = documentValidator(doc);
    const requests = requestValidator(doc);
    const problems: string[] = [];
    for (const exchange of exchanges) {
      const { method, url } = exchange.request;
      const seen = `${method} ${url} -> ${exchange.status}`;
      if (exchange.status >= 200 && exchange.status < 300) problems.push(...requests.problemsOf(exchange.request).map((problem) => `${seen}: request: ${problem}`));
      const operation = requests.operationOf(method.toLowerCase(), new URL(url, 'http://x').pathname);
      if (operation === undefined || !exchange.contentType.startsWith('application/json')) {
        problems.push(`${seen}: no operation, or an answer that is not JSON (${exchange.contentType})`);
        continue;
      }
      const where = pointer('paths', operation.template, method.toLowerCase(), 'responses', String(exchange.status), 'content', 'application/json', 'schema');
      const validate = ajv.getSchema(`openapi${where}`);
      if (validate === undefined) problems.push(`${seen}: status not documented`);
      else if (!validate(JSON.parse(await exchange.body))) problems.push(`${seen}: answer: ${JSON.stringify(validate.errors).slice(0, 600)}`);
    }
    expect(exchanges.length).toBeGreaterThan(30);
    expect(new Set(exchanges.map((exchange) => exchange.status))).toEqual(new Set([200, 201, 202, 400, 404, 429]));
    expect(problems).toEqual([]);
  });
});
