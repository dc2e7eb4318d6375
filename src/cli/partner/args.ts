import { parseArgs } from 'node:util';
import { isWellFormedApiKey } from '../../shared/access/api-key.js';
import { IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import { isLoopbackHost } from './loopback.js';
import { reportFormatOfPath, type ReportFormat } from './report.js';
import { DEFAULT_RETRY_POLICY } from './send-batch.js';
import { formatOfPath, type InputFormatName } from './source-row.js';

export const USAGE = `usage: bulk-import listings|machines FILE [options]

FILE is .csv (a header of API field names, array cells separated by |), .json (an array of
rows) or .ndjson / .jsonl (one row per line).

options:
  --api-key KEY          API key (default: $BULK_IMPORT_API_KEY)
  --base-url URL         API base URL, e.g. https://api.example.com (default: $BULK_IMPORT_BASE_URL)
  --insecure             allow a plain http:// base URL to a host other than this machine (the
                         API key then crosses the network unencrypted)
  --report FILE          write the failed rows to FILE (.csv: line,reason,field,code,external_id, a
                         line per problem; .json: [{line, external_id, reason, details}])
  --dry-run              validate every row locally; send nothing
  --dry-run=server       send every batch as a server dry run (?dry_run=true): the server checks
                         it as an import, external_id matching included, and writes nothing;
                         prints what would be inserted, updated and left unchanged
  --format FORMAT        csv, json or ndjson, when the extension does not say
  --no-idempotency       the server lacks Idempotency-Key support: never retry a request whose
                         outcome is unknown (5xx other than 503, dropped connection, timeout)
  --retries N            attempts per batch on network errors and 5xx (default ${DEFAULT_RETRY_POLICY.maxAttempts})
  --timeout SEC          per request (default 120)
  --max-wait SEC         longest Retry-After to wait out, else stop (default ${DEFAULT_RETRY_POLICY.maxWaitMs / 1000})
  --max-retry-time SEC   longest time to keep retrying one batch, waits included (429s, 503s,
                         lost replies), else stop (default ${DEFAULT_RETRY_POLICY.maxRetryTimeMs / 1000})
  --quiet                no progress output, only notices
  --json                 print the summary as one JSON object
  -h, --help             this text

A nightly sync: give each row your own id in an external_id column (1 to 100 characters, unique
per file); a row whose external_id the account already has updates that row instead of adding
another, and a later row with the same external_id in the file fails.

exit status: 0 every row read is accounted for: imported (or valid, with --dry-run); 1 some rows
failed or are unaccounted for (the report says which); 2 usage error, unreadable file,
authentication failure, the server unreachable or retried past --retries or --max-retry-time, or
a reply that cannot be believed (counts that do not add up to the rows sent, a reply too large
to read): that batch's rows are unaccounted for, check them before sending them again.`;

export class UsageError extends Error {}

export interface CliOptions {
  kind: ImportKind;
  file: string;
  format: InputFormatName;
  /** --dry-run (`local`: checked here, nothing sent) or --dry-run=server (sent as server dry runs) */
  dryRun: false | 'local' | 'server';
  /** set unless --dry-run (local) */
  apiKey?: string;
  baseUrl?: string;
  /** where `baseUrl` came from, as messages name it */
  baseUrlOrigin?: '--base-url' | 'BULK_IMPORT_BASE_URL';
  /** --insecure let a plain http:// base URL to another host through: warn about it */
  insecureHttp: boolean;
  report?: { path: string; format: ReportFormat };
  idempotency: boolean;
  maxAttempts: number;
  timeoutMs: number;
  maxWaitMs: number;
  maxRetryTimeMs: number;
  quiet: boolean;
  json: boolean;
}

function positiveNumber(name: string, raw: string | undefined, fallback: number, integer = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new UsageError(`${name} must be a positive ${integer ? 'whole ' : ''}number (got ${JSON.stringify(raw)})`);
  }
  return value;
}

/**
 * `--dry-run` and `--dry-run=local` check locally, `--dry-run=server` asks the server. note: taken
 * out before parseArgs, whose boolean options take no value and string options need one.
 */
function takeDryRun(argv: string[]): { rest: string[]; dryRun: CliOptions['dryRun'] } {
  let dryRun: CliOptions['dryRun'] = false;
  const rest: string[] = [];
  let options = true;
  for (const arg of argv) {
    if (arg === '--') options = false;
    const match = options ? /^--dry-run(?:=(.*))?$/s.exec(arg) : null;
    if (!match) {
      rest.push(arg);
      continue;
    }
    const mode = match[1] ?? 'local';
    if (mode !== 'local' && mode !== 'server') throw new UsageError(`--dry-run takes local or server (got ${JSON.stringify(mode)})`);
    dryRun = mode;
  }
  return { rest, dryRun };
}

/** `--help` → 'help'; anything wrong → UsageError. */
export function parseCliArgs(argv: string[], env: NodeJS.ProcessEnv): CliOptions | 'help' {
  const { rest, dryRun } = takeDryRun(argv);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        report: { type: 'string' },
        format: { type: 'string' },
        'no-idempotency': { type: 'boolean', default: false },
        retries: { type: 'string' },
        timeout: { type: 'string' },
        'max-wait': { type: 'string' },
        'max-retry-time': { type: 'string' },
        quiet: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        insecure: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [kind, file, ...extra] = positionals;
  if (kind === undefined || !(IMPORT_KIND_NAMES as string[]).includes(kind)) {
    throw new UsageError(`the first argument must be ${IMPORT_KIND_NAMES.join(' or ')} (got ${JSON.stringify(kind ?? '')})`);
  }
  if (file === undefined || file === '') throw new UsageError('FILE is required');
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);

  const format = values.format ?? formatOfPath(file);
  if (format !== 'csv' && format !== 'json' && format !== 'ndjson') {
    throw new UsageError(
      values.format === undefined
        ? `cannot tell the format of ${file} from its extension: use .csv, .json, .ndjson or .jsonl, or --format`
        : `--format must be csv, json or ndjson (got ${JSON.stringify(values.format)})`,
    );
  }

  let report: CliOptions['report'];
  if (values.report !== undefined) {
    const reportFormat = reportFormatOfPath(values.report);
    if (!reportFormat) throw new UsageError(`--report must name a .csv or .json file (got ${JSON.stringify(values.report)})`);
    report = { path: values.report, format: reportFormat };
  }

  const sends = dryRun !== 'local';
  const apiKey = values['api-key'] ?? env.BULK_IMPORT_API_KEY;
  const baseUrl = values['base-url'] ?? env.BULK_IMPORT_BASE_URL;
  // note: named in messages, so a URL set long ago in the environment is not mistaken for an option.
  const baseUrlOrigin = values['base-url'] === undefined ? 'BULK_IMPORT_BASE_URL' : '--base-url';
  if (sends) {
    if (apiKey === undefined || apiKey === '') throw new UsageError('an API key is required: --api-key or BULK_IMPORT_API_KEY');
    // note: checked here because every malformed key the server sees counts toward the IP lockout.
    if (!isWellFormedApiKey(apiKey)) throw new UsageError('the API key is malformed: expected svc_live_<8 hex>_<32 hex>');
    if (baseUrl === undefined || baseUrl === '') throw new UsageError('a base URL is required: --base-url or BULK_IMPORT_BASE_URL');
    // note: not URL.canParse, whose optimised path on Node 20 refuses some valid non-ASCII hosts.
    if (!isHttpOrHttpsUrl(baseUrl)) {
      throw new UsageError(`the base URL must be an http:// or https:// URL (got ${JSON.stringify(baseUrl)})`);
    }
    if (sendsKeyInTheClear(baseUrl) && !values.insecure) {
      throw new UsageError(`${baseUrlOrigin} ${baseUrl} sends your API key unencrypted; use https://, or --insecure to send it anyway`);
    }
  }

  return {
    kind: kind as ImportKind,
    file,
    format,
    dryRun,
    ...(sends ? { apiKey, baseUrl, baseUrlOrigin } : {}),
    insecureHttp: sends && sendsKeyInTheClear(baseUrl!),
    ...(report ? { report } : {}),
    idempotency: !values['no-idempotency'],
    maxAttempts: positiveNumber('--retries', values.retries, DEFAULT_RETRY_POLICY.maxAttempts, true),
    timeoutMs: positiveNumber('--timeout', values.timeout, 120) * 1000,
    maxWaitMs: positiveNumber('--max-wait', values['max-wait'], DEFAULT_RETRY_POLICY.maxWaitMs / 1000) * 1000,
    maxRetryTimeMs: positiveNumber('--max-retry-time', values['max-retry-time'], DEFAULT_RETRY_POLICY.maxRetryTimeMs / 1000) * 1000,
    quiet: values.quiet,
    json: values.json,
  };
}

/** Plain http:// to a host that is not this machine. */
function sendsKeyInTheClear(baseUrl: string): boolean {
  const url = new URL(baseUrl);
  return url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

function isHttpOrHttpsUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}
