import { ImportIdSchema } from '../../shared/api-schemas/import-id.js';
import { apiTargetOf, type ApiTarget } from './api-target.js';
import { reportOptionOf, type ReportOption } from './report.js';
import { REQUEST_OPTIONS, REQUEST_OPTIONS_USAGE, requestLimitsOf, type RequestLimits } from './request-options.js';
import { parseCommandLine, positiveNumber, UsageError } from './usage-error.js';

const LIST_DEFAULT = 20;

export const IMPORTS_USAGE = `usage: bulk-import imports show ID [--json] [options]
       bulk-import imports list [--limit N] [--json] [options]
       bulk-import imports errors ID --report FILE [options]

Every batch an import run sends is one import of your account; the server names it (import_id)
in its 201, 503 and 504 replies, and keeps it for 30 days (by default) after it ended.

  show ID        the import: kind, state, times and row counts. --json: the import as the API
                 answers it (GET /v1/api/imports/{id}), one JSON object
  list           the account's imports, newest first, one line each: id, kind, state, created_at,
                 row counts. --limit N: how many (default ${LIST_DEFAULT}). --json: one JSON object per
                 line (NDJSON), each import as the API answers it
  errors ID      rebuild the --report of the import's failed rows (GET .../errors, every page):
                 .csv: index,reason,field,code,external_id, a line per problem; .json: [{index,
                 external_id, reason, details}]. index is the row's position in its request (0
                 for the first row of the batch). Rows the CLI refused before sending never
                 reached the server: --dry-run --report on the same file lists those again.

options:
${REQUEST_OPTIONS_USAGE}
  --json                 print JSON (see above)
  -h, --help             this text
  -V, --version          print the CLI's version

exit status: 0 done; 1 no such import (unknown, another account's, or past its retention); 2 usage
error, authentication failure (a key needs the scope jobs:read or listings:write), the server
unreachable or retried past --retries or --max-retry-time, a reply that cannot be believed, or a
report that cannot be written.`;

export type ImportsCommand =
  | { command: 'show'; importId: string }
  | { command: 'list'; limit: number }
  | { command: 'errors'; importId: string; report: ReportOption };

export type ImportsOptions = ImportsCommand & ApiTarget & RequestLimits & { json: boolean };

const COMMANDS = ['show', 'list', 'errors'] as const;

function importIdOf(command: string, raw: string | undefined): string {
  if (raw === undefined) throw new UsageError(`imports ${command} needs the import's ID`);
  if (!ImportIdSchema.safeParse(raw).success) throw new UsageError(`an import ID is 1 to 64 characters (got ${JSON.stringify(raw)})`);
  return raw;
}

/**
 * `bulk-import imports ...` (the arguments after `imports`): `--help` → 'help'; `--version` →
 * 'version'; anything wrong → UsageError.
 */
export function parseImportsArgs(argv: string[], env: NodeJS.ProcessEnv): ImportsOptions | 'help' | 'version' {
  const { values, positionals } = parseCommandLine(argv, {
    ...REQUEST_OPTIONS,
    limit: { type: 'string' },
    report: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  if (values.help) return 'help';
  if (values.version) return 'version';
  const [name, id, ...extra] = positionals;
  if (name === undefined || !(COMMANDS as readonly string[]).includes(name)) {
    throw new UsageError(`imports takes ${COMMANDS.join(', ')} (got ${JSON.stringify(name ?? '')})`);
  }
  const command = name as (typeof COMMANDS)[number];
  const unexpected = command === 'list' ? [id, ...extra] : extra;
  if (unexpected.some((arg) => arg !== undefined)) throw new UsageError(`unexpected arguments: ${unexpected.filter((arg) => arg !== undefined).join(' ')}`);
  if (values.limit !== undefined && command !== 'list') throw new UsageError('--limit is for imports list');
  if (values.report !== undefined && command !== 'errors') throw new UsageError('--report is for imports errors');

  let chosen: ImportsCommand;
  if (command === 'list') chosen = { command, limit: positiveNumber('--limit', values.limit, LIST_DEFAULT, true) };
  else if (command === 'show') chosen = { command, importId: importIdOf(command, id) };
  else {
    const importId = importIdOf(command, id);
    if (values.report === undefined) throw new UsageError('imports errors needs --report FILE (.csv or .json)');
    chosen = { command, importId, report: reportOptionOf(values.report) };
  }
  return { ...chosen, ...apiTargetOf(values, env), ...requestLimitsOf(values), json: values.json };
}
