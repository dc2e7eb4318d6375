import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

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

  /** A listing of about 200 bytes, numbered. */
  const line = (n: number) =>
    `{"external_id":"SKU-${n}","title":"Lamp ${n}","description":"A fine print, checked by hand.","price_cents":1200,"currency":"USD","category":"home_decor","material":"PLA","photo_urls":["https://cdn.example.test/${n}.jpg"]}\n`;

  /** The API process's peak resident memory (VmHWM), in MB. */
  function peakRssMb(pid: number): number {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Math.round(Number(match![1]) / 1024);
  }

  /**
   * Streams `rows` lines to POST /v1/api/imports, written as the socket drains, never held
   * whole; `onSent(bytes)` after each write may stop it. Resolves with the status and body, or
   * rejects when the connection breaks.
   */
  function upload(
    baseUrl: string,
    key: string,
    rows: number,
    options: { idempotencyKey?: string; onSent?: (bytes: number) => void } = {},
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(`${baseUrl}/v1/api/imports?kind=listings`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/x-ndjson',
          ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      let n = 0;
      let sent = 0;
      const write = () => {
        while (n < rows) {
          let chunk = '';
          for (let i = 0; i < 500 && n < rows; i += 1, n += 1) chunk += line(n);
          sent += Buffer.byteLength(chunk);
          const more = req.write(chunk);
          options.onSent?.(sent);
          if (!more) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
  }

  async function counts(s: FaultScenario) {
    const [row] = await s.sql<{ imports: number; staged: number; errors: number }[]>`
      select (select count(*)::int from imports) as imports, (select count(*)::int from import_file_rows) as staged,
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
    const res = await upload(api.baseUrl, scenario.apiKey, rows, { onSent: (sent) => (bytes = sent) });
    expect(bytes).toBeGreaterThan(95 * 1024 * 1024);
    expect(res.status, res.body).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ import: { source: 'file', state: 'queued', rows: { received: rows, skipped: 0 } } });
    const peak = peakRssMb(api.child.pid!);
    console.log(`file import of ${rows} rows, ${Math.round(bytes / 1024 / 1024)} MiB: API peak resident memory ${peak} MB (${atStart} MB once started)`);
    expect(peak).toBeLessThan(300);
    expect(await counts(scenario)).toMatchObject({ imports: 1, staged: rows });
    const [space] = await scenario.sql<{ mb: number }[]>`select round(pg_total_relation_size('import_file_rows') / 1048576.0) as mb`;
    console.log(`staged in PostgreSQL: ${space!.mb} MB (table and its indexes) for a ${Math.round(bytes / 1024 / 1024)} MiB file`);
  }, 240_000);

  it('keeps nothing of an upload whose API dies mid-way; the retry with the same Idempotency-Key imports the file once', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const rows = 60_000;
    let killed = false;
    // the API is SIGKILLed once some 4 MB of the file are in
    const interrupted = upload(api.baseUrl, s.apiKey, rows, {
      idempotencyKey: 'catalogue-1',
      onSent: (bytes) => {
        if (!killed && bytes > 4_000_000) {
          killed = true;
          api.child.kill('SIGKILL');
        }
      },
    });
    await expect(interrupted).rejects.toThrow();
    await api.exited;
    expect(await counts(s)).toEqual({ imports: 0, staged: 0, errors: 0 });

    const again = await s.startApi();
    await s.startWorker();
    const retried = await upload(again.baseUrl, s.apiKey, rows, { idempotencyKey: 'catalogue-1' });
    expect(retried.status, retried.body).toBe(202);
    const { import: accepted } = JSON.parse(retried.body) as { import: { id: string } };
    await expect
      .poll(async () => (await s.sql<{ state: string }[]>`select state from imports where job_id = ${accepted.id}`)[0]?.state, { timeout: 90_000, interval: 200 })
      .toBe('completed');
    const [written] = await s.sql<{ rows: number; distinct_ids: number }[]>`
      select count(*)::int as rows, count(distinct external_id)::int as distinct_ids from listings`;
    expect(written).toEqual({ rows, distinct_ids: rows });
    expect(await counts(s)).toMatchObject({ imports: 1, staged: 0 });
  }, 240_000);
});
