import type { ImportKind } from '../../shared/import/import-kinds.js';
import { insecureWarning } from './api-target.js';
import { CATALOGUE_USAGE, parseCatalogueArgs } from './catalogue-args.js';
import type { CliIo } from './cli-io.js';
import { createApiContext } from './create-api-context.js';
import { FatalError } from './fatal-error.js';
import { listRows } from './list-rows.js';
import { parseOrExit } from './parse-or-exit.js';
import { printable } from './printable.js';

/**
 * `bulk-import listings|machines list ...` (`argv` after `list`). Returns the exit status: 0
 * done, 2 usage error, authentication failure, unreachable server or a reply that cannot be
 * believed, as for `imports` (imports-main.ts), whose reads it shares (read-api.ts).
 */
export async function catalogueMain(kind: ImportKind, argv: string[], env: NodeJS.ProcessEnv, io: CliIo, userAgent: string): Promise<number> {
  const options = parseOrExit(() => parseCatalogueArgs(kind, argv, env), CATALOGUE_USAGE, io);
  if (typeof options === 'number') return options;
  if (options.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning(options))}\n`);
  const ctx = createApiContext(options, options, userAgent, (message) => void io.stderr.write(`${printable(message)}\n`));
  try {
    return await listRows(ctx, options, io);
  } catch (error) {
    if (!(error instanceof FatalError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n`);
    return 2;
  }
}
