import { apiTargetOf, type ApiTarget } from './api-target.js';
import { reportOptionOf, type ReportOption } from './report.js';
import { REQUEST_OPTIONS, requestLimitsOf, type RequestLimits } from './request-options.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { positiveNumber, UsageError } from './usage-error.js';

/** --dry-run: `local` checks here and sends nothing, `server` sends every batch as ?dry_run=true. */
export type DryRunMode = false | 'local' | 'server';

/**
 * The options of every command that sends a file in batches (an import, an archive or delete), as
 * parseArgs takes them.
 */
export const SENDING_OPTIONS = {
  ...REQUEST_OPTIONS,
  'max-watch': { type: 'string' },
  report: { type: 'string' },
  'no-idempotency': { type: 'boolean', default: false },
  quiet: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
} as const;

/** What they come to. */
export interface SendingOptions extends Partial<Omit<ApiTarget, 'insecureHttp'>>, RequestLimits {
  /** --insecure let a plain http:// base URL to another host through: warn about it */
  insecureHttp: boolean;
  report?: ReportOption;
  idempotency: boolean;
  maxWatchMs: number;
  quiet: boolean;
  json: boolean;
}

/**
 * `--dry-run` and `--dry-run=local` check locally, `--dry-run=server` asks the server. note: taken
 * out before parseArgs, whose boolean options take no value and string options need one; an
 * argument after `--` is a file, whatever its name.
 */
export function takeDryRun(argv: string[]): { rest: string[]; dryRun: DryRunMode } {
  let dryRun: DryRunMode = false;
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

type SendingValues = Parameters<typeof requestLimitsOf>[0] &
  Parameters<typeof apiTargetOf>[0] & { 'max-watch'?: string; report?: string; 'no-idempotency': boolean; quiet: boolean; json: boolean };

/** SENDING_OPTIONS' values, checked; UsageError for a wrong one. */
export function sendingOptionsOf(values: SendingValues, env: NodeJS.ProcessEnv, dryRun: DryRunMode): SendingOptions {
  const report = values.report === undefined ? undefined : reportOptionOf(values.report);
  // note: a local dry run sends nothing, so it needs neither key nor URL.
  const target = dryRun === 'local' ? undefined : apiTargetOf(values, env);
  return {
    ...(target ? { apiKey: target.apiKey, baseUrl: target.baseUrl, baseUrlOrigin: target.baseUrlOrigin } : {}),
    insecureHttp: target?.insecureHttp ?? false,
    ...(report ? { report } : {}),
    idempotency: !values['no-idempotency'],
    ...requestLimitsOf(values),
    maxWatchMs: positiveNumber('--max-watch', values['max-watch'], DEFAULT_RETRY_POLICY.maxWatchMs / 1000) * 1000,
    quiet: values.quiet,
    json: values.json,
  };
}
