import type { ImportKind } from '../../shared/import/import-kinds.js';
import { CATALOGUE_USAGE, parseCatalogueArgs, type CatalogueListOptions } from './catalogue-args.js';
import type { Command } from './command.js';
import { listRows } from './list-rows.js';
import { runReads } from './read-command.js';

/**
 * `bulk-import listings|machines list ...`. Exit status: 0 done, 2 usage error, authentication
 * failure, unreachable server or a reply that cannot be believed, as for `imports`
 * (imports-command.ts), whose reads it shares (read-api.ts).
 */
export function catalogueCommand(kind: ImportKind): Command<CatalogueListOptions> {
  return {
    usage: CATALOGUE_USAGE,
    parse: (args, env) => parseCatalogueArgs(kind, args, env),
    run: (options, io) => runReads(options, io, (ctx) => listRows(ctx, options, io)),
  };
}
