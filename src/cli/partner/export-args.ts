import { CatalogueExportQuerySchema } from '../../shared/api-schemas/catalogue-rows.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import { apiTargetOf, type ApiTarget } from './api-target.js';
import { REQUEST_OPTIONS, REQUEST_OPTIONS_USAGE, requestLimitsOf, type RequestLimits } from './request-options.js';
import { parseCommandLine, UsageError } from './usage-error.js';

export const EXPORT_USAGE = `usage: bulk-import listings|machines export [--csv] [--updated-since TIME] [--archived] [options] > FILE

Writes the account's whole catalogue of listings (or machines) to stdout in one request, one
snapshot, as it streams in (GET /v1/api/listings/export): a file or a pipe is written as fast
as it reads, never held whole here.

  --csv                  CSV (a header of the field names, then a row a line; arrays as entries
                         separated by |, null as an empty cell, a cell that starts with = + - @
                         begins with '); default NDJSON, a row a line as the API answers it
  --updated-since TIME   only rows created, changed, archived or restored at or after TIME, an ISO
                         8601 date and time with a zone (2026-11-24T02:00:00Z)
  --archived             only archived rows (without it: only active ones)

options:
${REQUEST_OPTIONS_USAGE}
  -h, --help             this text
  -V, --version          print the CLI's version

A file named export is imported as ./export.

exit status: 0 done; 2 usage error, authentication failure (a key needs the scope listings:read
or listings:write), the server unreachable or retried past --retries or --max-retry-time (an
export of the account already running is waited for, as its 429 asks), or an answer cut short
(what was written before stays written, and is not the whole catalogue).`;

export interface ExportOptions extends ApiTarget, RequestLimits {
  kind: ImportKind;
  csv: boolean;
  updatedSince?: string;
  archived: boolean;
}

/** `bulk-import listings|machines export ...` (`argv` after `export`). */
export function parseExportArgs(kind: ImportKind, argv: string[], env: NodeJS.ProcessEnv): ExportOptions | 'help' | 'version' {
  const { values, positionals } = parseCommandLine(argv, {
    ...REQUEST_OPTIONS,
    csv: { type: 'boolean', default: false },
    'updated-since': { type: 'string' },
    archived: { type: 'boolean', default: false },
  });
  if (values.help) return 'help';
  if (values.version) return 'version';
  if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
  const updatedSince = values['updated-since'];
  if (updatedSince !== undefined) {
    // note: the server's own rule, so a typo costs no request
    const result = CatalogueExportQuerySchema.shape.updated_since.safeParse(updatedSince);
    if (!result.success) throw new UsageError(`--updated-since: ${result.error.issues[0]?.message ?? 'invalid'} (got ${JSON.stringify(updatedSince)})`);
  }
  return {
    kind,
    csv: values.csv,
    ...(updatedSince === undefined ? {} : { updatedSince }),
    archived: values.archived,
    ...apiTargetOf(values, env),
    ...requestLimitsOf(values),
  };
}
