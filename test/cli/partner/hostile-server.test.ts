import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runPartnerCli, WELL_FORMED_KEY } from '../../support/partner-cli.js';

const KEY = WELL_FORMED_KEY;
/** What a terminal would act on, raw: C0 but the line feeds the CLI ends its lines with, DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW_CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const run = (args: string[]) => runPartnerCli(args);

/** A local HTTP server that answers every request with `answer` and counts what it got. */
async function server(answer: (req: IncomingMessage, res: ServerResponse) => void, host = '127.0.0.1'): Promise<{ url: string; port: number; requests: () => number; server: Server }> {
  let requests = 0;
  const srv = createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => answer(req, res));
  });
  srv.listen(0, host);
  await once(srv, 'listening');
  const { port } = srv.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, requests: () => requests, server: srv };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const MACHINE = '{"template_id": "t", "category": "fdm", "manufacturer": "P", "model": "M"}\n';

describe('bulk-import against hostile input and servers', () => {
  let dir: string;
  let machinesFile: string;
  const servers: Server[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bulk-import-hostile-'));
    machinesFile = join(dir, 'one.ndjson');
    await writeFile(machinesFile, MACHINE);
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const started = async (...args: Parameters<typeof server>) => {
    const s = await server(...args);
    servers.push(s.server);
    return s;
  };

  describe('prints what it did not write itself with terminal controls made visible', () => {
    it('in unknown CSV header names', async () => {
      const file = join(dir, 'header.csv');
      await writeFile(file, 'template_id,category,manufacturer,model,\u001b[31mred,\u202eevil\nt,fdm,P,M,x,y\n');
      const result = await run(['machines', file, '--dry-run']);
      expect(result.code).toBe(0);
      expect(result.stderr).toContain('ignoring columns that are not machines fields: \\u001b[31mred, \\u202eevil');
      expect(result.stderr).not.toMatch(RAW_CONTROLS);
    });

    it("in a server's row reasons and error texts, on stderr and in the --json summary", async () => {
      const reason = 'bad\u001b[2J\r\nfake: all rows imported\u202e\u009b';
      const rows = await started(json(201, { inserted: 0, skipped: 1, errors: [{ index: 0, reason }] }));
      const first = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', rows.url]);
      expect(first.code).toBe(1);
      expect(first.stderr).toContain('\\u001b[2J\\u000d\\u000afake: all rows imported\\u202e\\u009b');
      expect(first.stderr + first.stdout).not.toMatch(RAW_CONTROLS);

      const refusal = await started(json(403, { error: reason }));
      const second = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', refusal.url, '--json']);
      expect(second.code).toBe(2);
      expect(second.stderr + second.stdout).not.toMatch(RAW_CONTROLS);
      // note: still JSON, and it still says what the server said, its controls written out.
      expect(JSON.parse(second.stdout)).toMatchObject({ completed: false, error: '403 bad\\u001b[2J\\u000d\\u000afake: all rows imported\\u202e\\u009b' });
    });

    it("in row reasons that quote the input file (JSON.parse's message repeats the line), while the --report file keeps them exact", async () => {
      const file = join(dir, 'quoted.ndjson');
      await writeFile(file, `${MACHINE}\u001b[2J\u202eoops\n`);
      const shown = await run(['machines', file, '--dry-run']);
      expect(shown.code).toBe(1);
      expect(shown.stderr).toMatch(/line 2: invalid JSON: .*"\\u001b\[2J\\u202eoops"/);
      expect(shown.stderr + shown.stdout).not.toMatch(RAW_CONTROLS);

      const report = join(dir, 'quoted-report.json');
      const reported = await run(['machines', file, '--dry-run', '--report', report]);
      expect(reported.code).toBe(1);
      const [failure] = JSON.parse(await readFile(report, 'utf8'));
      expect(failure).toMatchObject({ line: 2, reason: expect.stringContaining('"\u001b[2J\u202eoops"') });
    });

    it("in a server's row reason in the --report file too: a report is read on a terminal as well", async () => {
      const reason = 'bad\u001b[2J\r\nfake: all rows imported\u202e\u009b';
      const rows = await started(json(201, { inserted: 0, skipped: 1, errors: [{ index: 0, reason }] }));
      const report = join(dir, 'server-report.csv');
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', rows.url, '--report', report]);
      expect(result.code).toBe(1);
      expect(result.stderr + result.stdout).not.toMatch(RAW_CONTROLS);
      expect(await readFile(report, 'utf8')).toBe('line,reason,field,code,external_id\n1,bad\\u001b[2J\\u000d\\u000afake: all rows imported\\u202e\\u009b,,,\n');
    });

    it('in the Location of a redirect (a C1 CSI, which a server can send as the byte 0x9b)', async () => {
      const redirecting = await started(json(308, {}, { location: 'https://other.example/\u009b31mv1' }));
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', redirecting.url]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('redirect to https://other.example/\\u009b31mv1; bulk-import never follows redirects');
      expect(result.stderr + result.stdout).not.toMatch(RAW_CONTROLS);
    });
  });

  it.each([307, 308, 301])('stops at a %i redirect to another server, which never hears of the rows, and counts nothing as imported', async (status) => {
    const elsewhere = await started(json(201, { inserted: 1, skipped: 0, errors: [] }));
    const redirecting = await started(json(status, {}, { location: `${elsewhere.url}/v1/api/machines/bulk` }));
    const report = join(dir, `redirect-${status}.json`);
    const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', redirecting.url, '--json', '--report', report]);
    expect(result.code).toBe(2);
    const message = `the server answered ${status} with a redirect to ${elsewhere.url}/v1/api/machines/bulk; bulk-import never follows redirects (check --base-url)`;
    expect(result.stderr).toContain(message);
    expect(redirecting.requests()).toBe(1);
    expect(elsewhere.requests()).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ inserted: 0, failed: 1, completed: false });
    expect(JSON.parse(await readFile(report, 'utf8'))).toEqual([{ line: 1, reason: `not imported: ${message}`, details: [] }]);
  });

  describe('plain http://', () => {
    it.each(['http://api.example.com', 'http://10.1.2.3:8080', 'http://[2001:db8::1]'])('to %s is refused without --insecure, before anything is read or sent', async (baseUrl) => {
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', baseUrl]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`error: --base-url ${baseUrl} sends your API key unencrypted; use https://, or --insecure to send it anyway`);
      expect(result.stdout).toBe('');
    });

    it.each(['localhost', '127.0.0.1', '127.8.9.10', '[::1]', 'api.localhost'])('to %s (this machine) needs no --insecure and warns of nothing', async (host) => {
      const target = await started(json(201, { inserted: 1, skipped: 0, errors: [] }), '::');
      // note: *.localhost resolves to loopback by RFC 6761, but not every resolver knows it; the URL is what is checked.
      const port = host === 'api.localhost' ? 9 : target.port;
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', `http://${host}:${port}`, '--retries', '1', '--quiet']);
      expect(result.stderr).not.toMatch(/warning|unencrypted/);
      if (host !== 'api.localhost') {
        expect(result.code).toBe(0);
        expect(target.requests()).toBe(1);
      }
    });

    const lanAddress = Object.values(networkInterfaces())
      .flat()
      .find((address) => address?.family === 'IPv4' && !address.internal)?.address;
    it.skipIf(lanAddress === undefined)('to another address goes ahead with --insecure, and warns even with --quiet', async () => {
      const target = await started(json(201, { inserted: 1, skipped: 0, errors: [] }), '0.0.0.0');
      const baseUrl = `http://${lanAddress}:${target.port}`;
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', baseUrl, '--insecure', '--quiet']);
      expect(result.code).toBe(0);
      expect(target.requests()).toBe(1);
      expect(result.stderr).toContain(`warning: --base-url ${baseUrl} is plain http://: your API key crosses the network unencrypted (--insecure)`);
    });

    it('to a host name set in BULK_IMPORT_BASE_URL goes ahead with --insecure and says where the URL came from', async () => {
      // note: .invalid never resolves (RFC 6761): the request is attempted and fails before any byte is sent.
      const baseUrl = 'http://bulk-import-cli-test.invalid';
      const result = await runPartnerCli(['machines', machinesFile, '--insecure', '--quiet', '--retries', '1', '--timeout', '5'], {
        BULK_IMPORT_API_KEY: KEY,
        BULK_IMPORT_BASE_URL: baseUrl,
      });
      expect(result.stderr).toContain(`warning: BULK_IMPORT_BASE_URL ${baseUrl} is plain http://: your API key crosses the network unencrypted (--insecure)`);
      expect(result.stderr).toMatch(/gave up after 1 attempts/);
      expect(result.code).toBe(2);
    });

    it('over https:// is never questioned', async () => {
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', 'https://127.0.0.1:9', '--retries', '1', '--quiet']);
      expect(result.stderr).not.toMatch(/warning|unencrypted|--insecure/);
      expect(result.stderr).toMatch(/gave up after 1 attempts/);
    });
  });

  describe('believes a 201 only when it accounts for every row sent', () => {
    /** Five valid machines: one batch of five rows. */
    let fiveFile: string;
    beforeAll(async () => {
      fiveFile = join(dir, 'five.ndjson');
      await writeFile(fiveFile, MACHINE.repeat(5));
    });
    const HEAD = '{"inserted":5,"skipped":0,"errors":[]';
    const HUGE = 200 * 2 ** 20;
    const error = (index: unknown) => ({ index, reason: 'model: required', details: [{ field: 'model', code: 'required', message: 'required' }] });

    it.each<[string, number, unknown, RegExp]>([
      ['an unreadable 201 (not JSON)', 201, '<html>created</html>', /the server's 201 cannot be believed: it is not a JSON object/],
      ['a 201 of another shape', 201, { ok: true }, /the server's 201 cannot be believed: it is not of the documented shape/],
      ['counts that add up to more rows than were sent ("5 rows read, 55 inserted")', 201, { inserted: 55, skipped: 0, errors: [] }, /inserted \+ skipped is 55, but 5 rows were sent/],
      ['counts that add up to fewer rows than were sent', 201, { inserted: 3, skipped: 0, errors: [] }, /inserted \+ skipped is 3, but 5 rows were sent/],
      ['sync counts that do not add up', 201, { inserted: 1, updated: 1, unchanged: 1, skipped: 0, errors: [] }, /inserted \+ updated \+ unchanged \+ skipped is 3, but 5 rows were sent/],
      ['an error index outside the batch', 201, { inserted: 4, skipped: 1, errors: [error(5)] }, /errors\[0\]\.index is 5, but the rows sent are 0 to 4/],
      ['a negative error index', 201, { inserted: 4, skipped: 1, errors: [error(-1)] }, /it is not of the documented shape \(errors\[0\]\.index: /],
      ['a fractional error index', 201, { inserted: 4, skipped: 1, errors: [error(1.5)] }, /it is not of the documented shape \(errors\[0\]\.index: /],
      ['an error index given twice', 201, { inserted: 3, skipped: 2, errors: [error(1), error(1)] }, /row 1 is listed twice in errors/],
      ['skipped and errors that disagree', 201, { inserted: 3, skipped: 2, errors: [error(1)] }, /skipped is 2, but errors lists 1 row/],
    ])('%s: the batch is unaccounted for, the run stops (exit 2) and no impossible count is printed', async (_name, status, body, problem) => {
      const bad = await started((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      });
      const report = join(dir, 'unaccounted.csv');
      const text = await run(['machines', fiveFile, '--api-key', KEY, '--base-url', bad.url, '--quiet', '--report', report]);
      expect(text.code).toBe(2);
      expect(text.stderr).toMatch(problem);
      expect(text.stderr).toContain('5 rows are unaccounted for');
      expect(text.stdout).toMatch(/^machines: 5 rows read, 0 inserted, 0 failed, 5 unaccounted for, 0 batches, [\d.]+ s; stopped/);
      const reasons = (await readFile(report, 'utf8')).trim().split('\n').slice(1);
      expect(reasons).toHaveLength(5);
      for (const line of reasons) expect(line).toMatch(/^\d,"?unaccounted for: the server's 201 cannot be believed: /);

      const json = await run(['machines', fiveFile, '--api-key', KEY, '--base-url', bad.url, '--quiet', '--json']);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ rows_read: 5, inserted: 0, updated: 0, unchanged: 0, failed: 0, unaccounted: 5, completed: false });
    });

    it("holds a server dry run's 200 to the same counts: it never predicts more rows than were sent", async () => {
      const bad = await started(json(200, { inserted: 55, skipped: 0, errors: [], dry_run: true }));
      const result = await run(['machines', fiveFile, '--api-key', KEY, '--base-url', bad.url, '--quiet', '--dry-run=server']);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/the server's 200 to a dry run cannot be believed: inserted \+ skipped is 55, but 5 rows were sent/);
      expect(result.stderr).toContain('nothing was written (server dry run)');
      expect(result.stdout).not.toMatch(/would insert 55/);
      expect(result.stdout).toMatch(/would insert 0, 0 failed, 5 unaccounted for/);
    });

    it('still believes a 201 that adds up: row errors, sync counts and a row-error code this CLI does not know yet', async () => {
      const good = await started(
        json(201, { inserted: 1, updated: 1, unchanged: 1, skipped: 2, errors: [{ index: 3, reason: 'x: new', details: [{ field: 'x', code: 'some_future_code', message: 'new' }] }, error(0)] }),
      );
      const result = await run(['machines', fiveFile, '--api-key', KEY, '--base-url', good.url, '--quiet', '--json']);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout)).toMatchObject({ rows_read: 5, inserted: 1, updated: 1, unchanged: 1, failed: 2, unaccounted: 0, completed: true });
    });

    it.each<[string, Record<string, string>]>([
      ['streamed without a length', {}],
      ['with its Content-Length announced', { 'content-length': String(HEAD.length + HUGE + 1) }],
    ])('abandons a 200 MB reply (%s) long before the server has written it, and counts its rows as unaccounted for', async (_name, headers) => {
      const total = HUGE;
      let written = 0;
      let finished = false;
      let closed!: () => void;
      const closedAfter = new Promise<number>((resolve) => (closed = () => resolve(written)));
      const huge = await started((_req, res) => {
        res.on('error', () => {});
        res.on('close', closed);
        res.writeHead(201, { 'content-type': 'application/json', ...headers });
        res.write(HEAD);
        const chunk = Buffer.alloc(2 ** 20, 0x20);
        const pump = () => {
          while (written < total && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end('}', () => (finished = true));
        };
        pump();
      });
      const result = await run(['machines', fiveFile, '--api-key', KEY, '--base-url', huge.url, '--quiet', '--json']);
      const writtenAtClose = await closedAfter;
      expect(finished).toBe(false);
      expect(writtenAtClose).toBeLessThan(64 * 2 ** 20);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/the server's 201 is larger than 16 MiB, more than any real reply; it was not read/);
      expect(JSON.parse(result.stdout)).toMatchObject({ inserted: 0, failed: 0, unaccounted: 5, completed: false });
    });
  });

  describe('copies at most 1,000 characters of what the server says into the report', () => {
    let twoFile: string;
    beforeAll(async () => {
      twoFile = join(dir, 'two.ndjson');
      await writeFile(twoFile, MACHINE.repeat(2));
    });
    const reportLines = async (path: string) => (await readFile(path, 'utf8')).trim().split('\n').slice(1);

    it("a 50 MB error text of a 400: never read, each row's report line stays short", async () => {
      const huge = await started(json(400, { error: 'E'.repeat(50 * 2 ** 20) }));
      const report = join(dir, 'huge-error.csv');
      const result = await run(['machines', twoFile, '--api-key', KEY, '--base-url', huge.url, '--quiet', '--report', report]);
      expect(result.code).toBe(1);
      const lines = await reportLines(report);
      expect(lines).toHaveLength(2);
      for (const line of lines) {
        expect(line.length).toBeLessThan(2_000);
        expect(line).toMatch(/^[12],"400 \(a reply larger than 16 MiB, not read\)"/);
      }
    });

    it('a 1 MB error text of a 400: cut to its first 1,000 characters, saying how much was left out', async () => {
      const long = await started(json(400, { error: 'E'.repeat(2 ** 20) }));
      const report = join(dir, 'long-error.csv');
      const result = await run(['machines', twoFile, '--api-key', KEY, '--base-url', long.url, '--quiet', '--report', report]);
      expect(result.code).toBe(1);
      expect(await reportLines(report)).toEqual([1, 2].map((line) => `${line},400 ${'E'.repeat(1_000)}… (${2 ** 20 - 1_000} more characters),,,`));
      expect(result.stderr.length).toBeLessThan(5_000);
    });

    it("a 1 MB row reason and detail message of a 201, in the CSV and the JSON report", async () => {
      const reason = 'R'.repeat(2 ** 20);
      const long = await started(json(201, { inserted: 1, skipped: 1, errors: [{ index: 1, reason, details: [{ field: 'model', code: 'required', message: reason }] }] }));
      const cut = `${'R'.repeat(1_000)}… (${2 ** 20 - 1_000} more characters)`;
      const csv = join(dir, 'long-reason.csv');
      expect((await run(['machines', twoFile, '--api-key', KEY, '--base-url', long.url, '--quiet', '--report', csv])).code).toBe(1);
      expect(await reportLines(csv)).toEqual([`2,${cut},model,required,`]);
      const jsonReport = join(dir, 'long-reason.json');
      expect((await run(['machines', twoFile, '--api-key', KEY, '--base-url', long.url, '--quiet', '--report', jsonReport])).code).toBe(1);
      expect(JSON.parse(await readFile(jsonReport, 'utf8'))).toEqual([{ line: 2, reason: cut, details: [{ field: 'model', code: 'required', message: cut }] }]);
    });
  });

  it.each([
    [429, { error: 'Rate limit exceeded (per-minute)' }],
    [503, { error: 'Service temporarily unavailable' }],
  ])('a storm of %i replies ends within --max-retry-time, with a message that says so, and exit 2', async (status, body) => {
    const storm = await started(json(status, body, { 'retry-after': '1' }));
    const startedAt = Date.now();
    const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', storm.url, '--quiet', '--json', '--retries', '1000', '--max-retry-time', '3']);
    const elapsed = Date.now() - startedAt;
    expect(result.code).toBe(2);
    expect(storm.requests()).toBeGreaterThanOrEqual(2);
    expect(elapsed).toBeLessThan(3_000 + 1_500);
    expect(result.stderr).toMatch(new RegExp(`error: ${status} .*: still failing after [\\d.]+ s of retrying this batch; waiting [\\d.]+ s more would pass --max-retry-time \\(3 s\\)`));
    expect(JSON.parse(result.stdout)).toMatchObject({ inserted: 0, failed: 1, unaccounted: 0, completed: false });
  });
});
