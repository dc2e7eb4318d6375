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
      // note: still JSON, and it still says exactly what the server said.
      expect(JSON.parse(second.stdout)).toMatchObject({ completed: false, error: `403 ${reason}` });
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

    it("but writes a server's row reason to the --report file exactly as the server gave it", async () => {
      const reason = 'bad\u001b[2J\r\nfake: all rows imported\u202e\u009b';
      const rows = await started(json(201, { inserted: 0, skipped: 1, errors: [{ index: 0, reason }] }));
      const report = join(dir, 'server-report.csv');
      const result = await run(['machines', machinesFile, '--api-key', KEY, '--base-url', rows.url, '--report', report]);
      expect(result.code).toBe(1);
      expect(result.stderr + result.stdout).not.toMatch(RAW_CONTROLS);
      expect(await readFile(report, 'utf8')).toBe(`line,reason,field,code,external_id\n1,"${reason}",,,\n`);
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
});
