import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { EntryForm, RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { REQUEST_OPTIONS_USAGE } from './request-options.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { SENDING_OPTIONS, sendingOptionsOf, takeDryRun, type DryRunMode, type SendingOptions } from './sending-options.js';
import { parseCommandLine, UsageError } from './usage-error.js';

export const REMOVAL_USAGE = `usage: bulk-import listings|machines archive FILE [options]
       bulk-import listings|machines delete FILE [options]

Archives (or deletes) the rows FILE names: one entry per line, your external_id (or with --ids our
id of the row), blank lines skipped. Entries are sent in batches of 1,000 (POST
/v1/api/listings/bulk-archive, bulk-delete), each with its own Idempotency-Key, retried as imports
are. archive: a row leaves the active list and the marketplace, keeping every field; importing its
external_id again restores it. delete: the row is gone for good, and its external_id is free.

options:
${REQUEST_OPTIONS_USAGE}
  --ids                  the entries are our ids (the id of each row), not your external_ids
  --max-watch SEC        longest time to watch a batch answered 504 until its import ends
                         (default ${DEFAULT_RETRY_POLICY.maxWatchMs / 1000})
  --report FILE          write the failed entries to FILE (.csv: line,reason,field,code,external_id,
                         a line per problem; .json: [{line, external_id, reason, details}])
  --dry-run              check every entry locally; send nothing
  --dry-run=server       send every batch as a server dry run (?dry_run=true): the server checks
                         which entries name a row of the account, and changes nothing
  --no-idempotency       never retry a request whose outcome is unknown
  --quiet                no progress output, only notices
  --json                 print the summary as one JSON object
  -h, --help             this text
  -V, --version          print the CLI's version

An entry fails (and is in the report) when it is malformed, names no row of the account, or names
the same row as an earlier line. A file named archive or delete is given as ./archive.

exit status: 0 every entry read is accounted for: archived, already archived or deleted (valid,
with --dry-run); 1 some entries failed or are unaccounted for (the report says which); 2 usage
error, unreadable file, authentication failure, the server unreachable or retried past --retries
or --max-retry-time, or a reply that cannot be believed: that batch's entries are unaccounted
for. Archiving again is harmless (an archived row counts as already archived); a deleted row named
again fails as naming no row.`;

export interface RemovalOptions extends SendingOptions {
  kind: ImportKind;
  action: RowRemovalAction;
  file: string;
  by: EntryForm;
  dryRun: DryRunMode;
}

/** `bulk-import <kind> archive|delete ...` (`argv` after the action): `--help` → 'help'; `--version` → 'version'; anything wrong → UsageError. */
export function parseRemovalArgs(kind: ImportKind, action: RowRemovalAction, argv: string[], env: NodeJS.ProcessEnv): RemovalOptions | 'help' | 'version' {
  const { rest, dryRun } = takeDryRun(argv);
  const { values, positionals } = parseCommandLine(rest, { ...SENDING_OPTIONS, ids: { type: 'boolean', default: false } });
  if (values.help) return 'help';
  if (values.version) return 'version';
  const [file, ...extra] = positionals;
  if (file === undefined || file === '') throw new UsageError('FILE is required');
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  return { kind, action, file, by: values.ids ? 'id' : 'external_id', dryRun, ...sendingOptionsOf(values, env, dryRun) };
}
