import { insecureWarning } from './api-target.js';
import type { CliIo } from './cli-io.js';
import { createApiContext } from './create-api-context.js';
import { FatalError } from './fatal-error.js';
import { IMPORTS_USAGE, parseImportsArgs } from './imports-args.js';
import { InputError } from './input-error.js';
import { listImports } from './list-imports.js';
import { parseOrExit } from './parse-or-exit.js';
import { printable } from './printable.js';
import { rebuildReport } from './rebuild-report.js';
import { showImport } from './show-import.js';

/**
 * `bulk-import imports show|list|errors ...` (`argv` after `imports`). Returns the exit status:
 * 0 done, 1 no such import (404), 2 usage error, authentication failure, unreachable server, a
 * reply that cannot be believed or a report that cannot be written, as for an import run.
 */
export async function importsMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo, userAgent: string): Promise<number> {
  const options = parseOrExit(() => parseImportsArgs(argv, env), IMPORTS_USAGE, io);
  if (typeof options === 'number') return options;
  if (options.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning(options))}\n`);
  const ctx = createApiContext(options, options, userAgent, (message) => void io.stderr.write(`${printable(message)}\n`));
  try {
    switch (options.command) {
      case 'show':
        return await showImport(ctx, options, io);
      case 'list':
        return await listImports(ctx, options, io);
      case 'errors':
        return await rebuildReport(ctx, options, io);
    }
  } catch (error) {
    if (!(error instanceof FatalError || error instanceof InputError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n`);
    return 2;
  }
}
