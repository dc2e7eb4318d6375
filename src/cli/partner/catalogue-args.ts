import { CatalogueListQuerySchema } from '../../shared/api-schemas/catalogue-rows.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import { apiTargetOf, type ApiTarget } from './api-target.js';
import { REQUEST_OPTIONS, REQUEST_OPTIONS_USAGE, requestLimitsOf, type RequestLimits } from './request-options.js';
import { parseCommandLine, UsageError } from './usage-error.js';

export const LIST_FORMATS = ['ndjson', 'csv'] as const;
export type ListFormat = (typeof LIST_FORMATS)[number];

export const CATALOGUE_USAGE = `usage: bulk-import listings|machines list [--external-id ID] [--updated-since TIME] [--archived]
                                        [--format ndjson|csv] [options]

Reads the account's listings (or machines) back, as the server stores them, oldest first, and
writes them to stdout a page at a time as they arrive (GET /v1/api/listings, every page).

  --external-id ID       only the row with this external_id (0 or 1 row)
  --updated-since TIME   only rows created, changed, archived or restored at or after TIME, an ISO
                         8601 date and time with a zone (2026-11-24T02:00:00Z)
  --archived             only archived rows (without it: only active ones)
  --format FORMAT        ndjson (default): one JSON object per line, each row as the API answers
                         it; csv: a header of the field names, then a line per row (arrays as
                         entries separated by |, null as an empty cell)

options:
${REQUEST_OPTIONS_USAGE}
  -h, --help             this text
  -V, --version          print the CLI's version

A file named list is imported as ./list.

exit status: 0 done (also when no row matches: a note on stderr says so); 2 usage error,
authentication failure (a key needs the scope listings:read or listings:write), the server
unreachable or retried past --retries or --max-retry-time, or a reply that cannot be believed
(the rows printed before it stay printed).`;

export interface CatalogueListOptions extends ApiTarget, RequestLimits {
  kind: ImportKind;
  format: ListFormat;
  /** as typed: the server reads it as an import reads a row's external_id */
  externalId?: string;
  updatedSince?: string;
  archived: boolean;
}

/** The list's own check of a filter, the server's rule (CatalogueListQuerySchema), so a typo costs no request. */
function checked(option: string, field: 'external_id' | 'updated_since', raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const result = CatalogueListQuerySchema.shape[field].safeParse(raw);
  if (!result.success) throw new UsageError(`${option}: ${result.error.issues[0]?.message ?? 'invalid'} (got ${JSON.stringify(raw)})`);
  return raw;
}

/**
 * `bulk-import listings|machines list ...` (`argv` after `list`): `--help` → 'help'; `--version`
 * → 'version'; anything wrong → UsageError.
 */
export function parseCatalogueArgs(kind: ImportKind, argv: string[], env: NodeJS.ProcessEnv): CatalogueListOptions | 'help' | 'version' {
  const { values, positionals } = parseCommandLine(argv, {
    ...REQUEST_OPTIONS,
    'external-id': { type: 'string' },
    'updated-since': { type: 'string' },
    archived: { type: 'boolean', default: false },
    format: { type: 'string' },
  });
  if (values.help) return 'help';
  if (values.version) return 'version';
  if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
  const format = values.format ?? 'ndjson';
  if (!(LIST_FORMATS as readonly string[]).includes(format)) throw new UsageError(`--format must be ndjson or csv (got ${JSON.stringify(format)})`);
  const externalId = checked('--external-id', 'external_id', values['external-id']);
  const updatedSince = checked('--updated-since', 'updated_since', values['updated-since']);
  return {
    kind,
    format: format as ListFormat,
    ...(externalId === undefined ? {} : { externalId }),
    ...(updatedSince === undefined ? {} : { updatedSince }),
    archived: values.archived,
    ...apiTargetOf(values, env),
    ...requestLimitsOf(values),
  };
}
