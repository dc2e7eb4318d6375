import { describe, expect, it } from 'vitest';
import { parseCliArgs, USAGE, UsageError, type CliOptions } from '../../../src/cli/partner/args.js';
import { WELL_FORMED_KEY } from '../../support/partner-cli.js';

const parse = (extra: string[], env: NodeJS.ProcessEnv = {}) => parseCliArgs(['machines', 'rows.ndjson', '--api-key', WELL_FORMED_KEY, ...extra], env) as CliOptions;

describe('parseCliArgs: the base URL', () => {
  it.each(['http://api.example.com', 'http://10.1.2.3:8080', 'http://[2001:db8::1]/v1', 'http://localhost.example.com', 'http://0.0.0.0:3000', 'HTTP://API.EXAMPLE.COM'])(
    'refuses plain %s without --insecure',
    (baseUrl) => {
      expect(() => parse(['--base-url', baseUrl])).toThrow(new UsageError(`--base-url ${baseUrl} sends your API key unencrypted; use https://, or --insecure to send it anyway`));
    },
  );

  it('names BULK_IMPORT_BASE_URL when the URL came from the environment', () => {
    expect(() => parse([], { BULK_IMPORT_BASE_URL: 'http://api.example.com' })).toThrow(
      new UsageError('BULK_IMPORT_BASE_URL http://api.example.com sends your API key unencrypted; use https://, or --insecure to send it anyway'),
    );
  });

  it.each(['http://api.example.com', 'http://10.1.2.3:8080'])('takes plain %s with --insecure, and marks the run for a warning', (baseUrl) => {
    expect(parse(['--base-url', baseUrl, '--insecure'])).toMatchObject({ baseUrl, baseUrlOrigin: '--base-url', insecureHttp: true });
  });

  it.each(['http://localhost:3000', 'http://api.localhost', 'http://127.0.0.1:3000', 'http://127.8.9.10', 'http://[::1]:3000', 'https://api.example.com', 'https://10.1.2.3'])(
    'takes %s as it is, with no warning',
    (baseUrl) => {
      expect(parse(['--base-url', baseUrl])).toMatchObject({ baseUrl, insecureHttp: false });
      expect(parse(['--base-url', baseUrl, '--insecure'])).toMatchObject({ insecureHttp: false });
    },
  );

  it.each(['ftp://api.example.com', 'file:///etc/passwd', 'ws://localhost:3000', 'javascript:alert(1)', 'api.example.com', '//api.example.com'])(
    'refuses %s, which is not http:// or https://, even with --insecure',
    (baseUrl) => {
      expect(() => parse(['--base-url', baseUrl, '--insecure'])).toThrow(/the base URL must be an http:\/\/ or https:\/\/ URL/);
    },
  );

  it('does not look at the base URL of a dry run, which sends nothing', () => {
    const options = parseCliArgs(['machines', 'rows.ndjson', '--dry-run', '--base-url', 'http://api.example.com'], {}) as CliOptions;
    expect(options).toMatchObject({ dryRun: 'local', insecureHttp: false });
    expect(options.baseUrl).toBeUndefined();
  });

  it('documents --insecure', () => {
    expect(USAGE).toMatch(/^ {2}--insecure {2,}\S/m);
  });
});

describe('parseCliArgs: --max-retry-time', () => {
  it('takes seconds, 1800 by default, and refuses anything but a positive number', () => {
    expect(parse(['--base-url', 'https://api.example.com'])).toMatchObject({ maxRetryTimeMs: 1_800_000 });
    expect(parse(['--base-url', 'https://api.example.com', '--max-retry-time', '90'])).toMatchObject({ maxRetryTimeMs: 90_000 });
    expect(() => parse(['--base-url', 'https://api.example.com', '--max-retry-time', '0'])).toThrow(new UsageError('--max-retry-time must be a positive number (got "0")'));
  });

  it('is documented', () => {
    expect(USAGE).toMatch(/^ {2}--max-retry-time SEC {2,}\S.*\(default 1800\)/ms);
  });
});

describe('parseCliArgs: --max-watch', () => {
  it('takes seconds, 600 by default, and refuses anything but a positive number', () => {
    expect(parse(['--base-url', 'https://api.example.com'])).toMatchObject({ maxWatchMs: 600_000 });
    expect(parse(['--base-url', 'https://api.example.com', '--max-watch', '30'])).toMatchObject({ maxWatchMs: 30_000 });
    expect(() => parse(['--base-url', 'https://api.example.com', '--max-watch', '0'])).toThrow(new UsageError('--max-watch must be a positive number (got "0")'));
  });

  it('is documented', () => {
    expect(USAGE).toMatch(/^ {2}--max-watch SEC {2,}\S.*\(default 600\)/ms);
  });
});

describe('parseCliArgs: --merge and --mirror', () => {
  const withUrl = (extra: string[]) => parse(['--base-url', 'https://api.example.com', ...extra]);

  it('replaces whole rows and mirrors nothing by default', () => {
    const options = withUrl([]);
    expect(options.update).toBe('replace');
    expect(options.mirror).toBeUndefined();
  });

  it.each<[string[], Partial<CliOptions>]>([
    [['--merge'], { update: 'merge' }],
    [['--merge', '--dry-run=server'], { update: 'merge', dryRun: 'server' }],
    [['--background', '--mirror'], { background: true, mirror: {} }],
    [['--background', '--mirror', '--missing', 'delete'], { mirror: { missing: 'delete' } }],
    [['--background', '--mirror', '--max-removal', '0'], { mirror: { maxRemoval: 0 } }],
    [['--background', '--mirror', '--merge', '--missing', 'archive', '--max-removal', '100'], { update: 'merge', mirror: { missing: 'archive', maxRemoval: 100 } }],
  ])('%j', (extra, expected) => {
    expect(withUrl(extra)).toMatchObject(expected);
  });

  it('takes --merge with a local dry run, which needs no key', () => {
    expect(parseCliArgs(['listings', 'rows.ndjson', '--merge', '--dry-run'], {})).toMatchObject({ update: 'merge', dryRun: 'local' });
  });

  it.each(['--merge', '--mirror', '--missing ACTION', '--max-removal N'])('documents %s', (flag) => {
    expect(USAGE).toMatch(new RegExp(`^ {2}${flag} {2,}\\S`, 'm'));
  });

  it('says in the exit status what a held mirror exits with', () => {
    expect(USAGE).toMatch(/With --mirror, also 1 when the\s+removal was held/);
  });
});
