import type { ApiContext } from './api-context.js';
import type { CliIo } from './cli-io.js';
import { readImport } from './import-resource.js';
import { importSummary } from './import-text.js';
import { printable, printableJson } from './printable.js';

/** What a 404 means for a partner, in one place for every command that reads an import. */
export function notFoundText(importId: string): string {
  return `import ${importId} not found: it is not an import of this account (unknown, another account's, or past its retention)`;
}

/** `bulk-import imports show ID`: 0 printed, 1 not found. */
export async function showImport(ctx: ApiContext, options: { importId: string; json: boolean; maxRetryTimeMs: number }, io: CliIo): Promise<number> {
  const found = await readImport(ctx, options.importId, (ctx.now ?? Date.now)() + options.maxRetryTimeMs);
  if (found === undefined) {
    io.stderr.write(`error: ${printable(notFoundText(options.importId))}\n`);
    return 1;
  }
  // note: --json prints the import as the server sent it, fields this CLI does not know included.
  // note: each line printable on its own: the line breaks are the CLI's, the texts the server's.
  io.stdout.write(`${options.json ? printableJson(found.body) : importSummary(found.import).map(printable).join('\n')}\n`);
  return 0;
}
