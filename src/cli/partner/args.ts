import { formatOfPath, type InputFormatName } from '../../shared/import/file/source-row.js';
import { IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import type { MirrorOptions, UpdateMode } from './import-options.js';
import { IMPORT_OPTIONS, importOptionsOf } from './import-options-args.js';
import { REQUEST_OPTIONS_USAGE } from './request-options.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { SENDING_OPTIONS, sendingOptionsOf, takeDryRun, type DryRunMode, type SendingOptions } from './sending-options.js';
import { parseCommandLine, UsageError } from './usage-error.js';
import { resultsPathOf } from './results.js';

export { UsageError } from './usage-error.js';

export const USAGE = `usage: bulk-import listings|machines FILE [options]
       bulk-import imports show|list|errors ...   look up past imports (bulk-import imports --help)
       bulk-import listings|machines archive|delete FILE ...   archive or delete the rows FILE names
                                                  (bulk-import listings archive --help)
       bulk-import listings|machines list ...     read the account's rows back (bulk-import listings list --help)

FILE is .csv (a header of API field names, array cells separated by |), .json (an array of
rows) or .ndjson / .jsonl (one row per line).

options:
${REQUEST_OPTIONS_USAGE}
  --max-watch SEC        longest time to watch an import answered 504 until it ends, reading it
                         at /v1/api/imports/{id}, else stop (default ${DEFAULT_RETRY_POLICY.maxWatchMs / 1000})
  --report FILE          write the failed rows to FILE (.csv: line,reason,field,code,external_id, a
                         line per problem; .json: [{line, external_id, reason, details}])
  --results FILE         write each row the server took to FILE (.csv: line,external_id,id,outcome,
                         in file order): our id for it and inserted, updated or unchanged (the
                         batches ask with return=rows); not with --background or a local --dry-run
  --background           send the whole file as one file import (POST /v1/api/imports) that the
                         server writes in the background, and watch it until it ends: for one
                         large catalogue, say once a night. The server checks every row (no local
                         checks). Without it: batches, each answered at once
  --merge                each row changes only the fields it carries, in the row its external_id
                         names (update=merge): every row needs an external_id; a row naming no row
                         of the account is created when it is whole, else fails naming its missing
                         fields. null (JSON, NDJSON) clears an optional field; an empty CSV cell
                         leaves the field as it is. Rows are checked locally with the merge rules;
                         with --dry-run=server, a merge's dry run; with --background, a merged file
  --mirror               with --background only: the file is the whole catalogue of its kind
                         (mode=mirror): once it is written, the account's rows of that kind whose
                         external_id is on no line of the file are archived (rows without an
                         external_id never are). The summary shows the removal: done, held or
                         skipped
  --missing ACTION       with --mirror: archive (the default) or delete for good the rows the file
                         leaves out
  --max-removal N        with --mirror: the guard, a whole percentage from 0 to 100 (the server's
                         default: 10). When the rows to remove are more than N% of the account's
                         active rows of the kind with an external_id when the upload began, or a
                         line of the file cannot be read, nothing is removed (the removal is
                         held); the file's rows are still written. 100 turns the percentage off
  --dry-run              validate every row locally; send nothing
  --dry-run=server       send every batch as a server dry run (?dry_run=true): the server checks
                         it as an import, external_id matching included, and writes nothing;
                         prints what would be inserted, updated and left unchanged
  --format FORMAT        csv, json or ndjson, when the extension does not say
  --no-idempotency       the server lacks Idempotency-Key support: never retry a request whose
                         outcome is unknown (5xx other than 503, dropped connection, timeout)
  --quiet                no progress output, only notices
  --json                 print the summary as one JSON object
  -h, --help             this text
  -V, --version          print the CLI's version

A nightly sync: give each row your own id in an external_id column (1 to 100 characters, unique
per file); a row whose external_id the account already has updates that row instead of adding
another, and a later row with the same external_id in the file fails. Send the whole catalogue
with --background --mirror, so that rows you no longer have leave, and the day's changes with
--merge (external_id and the changed fields only).

exit status: 0 every row read is accounted for: imported (or valid, with --dry-run); 1 some rows
failed or are unaccounted for (the report says which); 2 usage error, unreadable file,
authentication failure, the server unreachable or retried past --retries or --max-retry-time, an
import answered 504 still running after --max-watch, or a reply that cannot be believed (counts
that do not add up to the rows sent, a reply too large to read): that batch's rows are
unaccounted for, check them before sending them again. With --background: 0 the import completed
with every row in, 1 it completed with failed rows, 2 it was cancelled (what it wrote stays),
failed (nothing written) or the server refused the file (nothing kept), or Ctrl-C stopped the
watching (the import goes on: bulk-import imports show ID). With --mirror, also 1 when the
removal was held: the file's rows are in but nothing was removed, and a notice says why (the
guard, or a line that could not be read).`;

export interface CliOptions extends SendingOptions {
  kind: ImportKind;
  file: string;
  format: InputFormatName;
  /** --dry-run (`local`: checked here, nothing sent) or --dry-run=server (sent as server dry runs) */
  dryRun: DryRunMode;
  /** --background: one file import, written by the server's workers (docs/partner-cli.md) */
  background: boolean;
  /** --merge: `merge`, else `replace` */
  update: UpdateMode;
  /** --mirror (with --background): its --missing and --max-removal, when given */
  mirror?: MirrorOptions;
  /** --results: the path of the CSV of each row's id and outcome (docs/partner-cli.md#results) */
  results?: string;
}

/** `--help` → 'help'; `--version` → 'version'; anything wrong → UsageError. */
export function parseCliArgs(argv: string[], env: NodeJS.ProcessEnv): CliOptions | 'help' | 'version' {
  const { rest, dryRun } = takeDryRun(argv);
  const { values, positionals } = parseCommandLine(rest, {
    ...SENDING_OPTIONS,
    format: { type: 'string' },
    background: { type: 'boolean', default: false },
    results: { type: 'string' },
    ...IMPORT_OPTIONS,
  });
  if (values.help) return 'help';
  if (values.version) return 'version';
  const [kind, file, ...extra] = positionals;
  if (kind === 'imports') throw new UsageError('imports comes first: bulk-import imports show|list|errors ... [options]');
  if (file === 'archive' || file === 'delete') throw new UsageError(`${file} comes right after the kind: bulk-import ${kind ?? 'listings'} ${file} FILE [options] (a file named ${file}: ./${file})`);
  if (file === 'list') throw new UsageError(`list comes right after the kind: bulk-import ${kind ?? 'listings'} list [options] (a file named list: ./list)`);
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

  // note: a file import has no dry run: the server keeps the file once it has checked it.
  if (values.background && dryRun !== false) throw new UsageError('--background cannot be combined with --dry-run: a file import writes what it is sent');
  const { update, mirror } = importOptionsOf(values, values.background);
  const results = values.results === undefined ? undefined : resultsPathOf(values.results);
  // note: only batches answer their rows: a file import answers counts, and a local dry run sends nothing.
  if (results !== undefined && values.background) throw new UsageError('--results cannot be combined with --background: a file import answers no rows; read them back with bulk-import KIND list');
  if (results !== undefined && dryRun === 'local') throw new UsageError('--results needs rows sent: use --dry-run=server, or no dry run');
  return {
    kind: kind as ImportKind,
    file,
    format,
    dryRun,
    background: values.background,
    update,
    ...(mirror ? { mirror } : {}),
    ...(results === undefined ? {} : { results }),
    ...sendingOptionsOf(values, env, dryRun),
  };
}
