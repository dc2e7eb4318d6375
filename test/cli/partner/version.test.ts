import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runPartnerCli, WELL_FORMED_KEY } from '../../support/partner-cli.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('bulk-import --version', () => {
  it.each([
    [['--version']],
    [['-V']],
    [['listings', 'rows.csv', '--version']],
    [['machines', '-V', '--api-key', WELL_FORMED_KEY]],
    [['imports', '--version']],
    [['imports', 'list', '-V']],
  ])('%j prints the name and the package\'s version on stdout and exits 0', async (args) => {
    const result = await runPartnerCli(args);
    expect(result).toEqual({ code: 0, stdout: `bulk-import ${PACKAGE_VERSION}\n`, stderr: '' });
  });

  it('answers without a key, a URL or a file that exists, and sends nothing', async () => {
    const result = await runPartnerCli(['listings', '/nonexistent/rows.csv', '--version'], { BULK_IMPORT_BASE_URL: 'http://api.example.com' });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^bulk-import \d+\.\d+\.\d+/);
  });

  // note: the entry through tsx, as the bin launcher runs it without a build (a dist/ left from an
  // earlier build would be what the launcher runs instead).
  it('answers `bulk-import -V` as its own process', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/bulk-import.ts', '-V'], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      env: { ...process.env, BULK_IMPORT_API_KEY: '', BULK_IMPORT_BASE_URL: '' },
    });
    expect(stdout).toBe(`bulk-import ${PACKAGE_VERSION}\n`);
    expect(stderr).toBe('');
  });

  it('is in both usages', async () => {
    expect((await runPartnerCli(['--help'])).stdout).toMatch(/^ {2}-V, --version {2,}print the CLI's version$/m);
    expect((await runPartnerCli(['imports', '--help'])).stdout).toMatch(/^ {2}-V, --version {2,}print the CLI's version$/m);
  });
});
