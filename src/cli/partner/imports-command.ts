import type { CliIo } from './cli-io.js';
import type { Command } from './command.js';
import { IMPORTS_USAGE, parseImportsArgs, type ImportsOptions } from './imports-args.js';
import { listImports } from './list-imports.js';
import { runReads } from './read-command.js';
import { rebuildReport } from './rebuild-report.js';
import { showImport } from './show-import.js';

/**
 * `bulk-import imports show|list|errors ...`. Exit status: 0 done, 1 no such import (404), 2
 * usage error, authentication failure, unreachable server, a reply that cannot be believed or a
 * report that cannot be written, as for an import run.
 */
async function runImports(options: ImportsOptions, io: CliIo): Promise<number> {
  return runReads(options, io, async (ctx) => {
    switch (options.command) {
      case 'show':
        return showImport(ctx, options, io);
      case 'list':
        return listImports(ctx, options, io);
      case 'errors':
        return rebuildReport(ctx, options, io);
    }
  });
}

export const importsCommand: Command<ImportsOptions> = { usage: IMPORTS_USAGE, parse: parseImportsArgs, run: runImports };
