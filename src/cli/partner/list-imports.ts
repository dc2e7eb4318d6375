import { z } from 'zod';
import type { ApiContext } from './api-context.js';
import { shapeProblem } from './check-reply.js';
import type { CliIo } from './cli-io.js';
import { FatalError } from './fatal-error.js';
import { believedImport } from './import-resource.js';
import { importLine } from './import-text.js';
import { printable, printableJson } from './printable.js';
import { readApi } from './read-api.js';

/** The most imports one page may hold (the API's own limit). */
const PAGE_MAX = 100;

const PageSchema = z.object({ data: z.array(z.unknown()), has_more: z.boolean() });

/**
 * `bulk-import imports list`: the account's imports, newest first, `limit` of them, following
 * `has_more` and `starting_after` a page at a time. One line each, or with --json one JSON
 * object per line (NDJSON): printed as each page arrives, so a long list starts at once.
 */
export async function listImports(ctx: ApiContext, options: { limit: number; json: boolean; maxRetryTimeMs: number }, io: CliIo): Promise<number> {
  const now = ctx.now ?? Date.now;
  let shown = 0;
  let after: string | undefined;
  while (shown < options.limit) {
    const size = Math.min(PAGE_MAX, options.limit - shown);
    const path = `v1/api/imports?limit=${size}${after === undefined ? '' : `&starting_after=${encodeURIComponent(after)}`}`;
    const reply = await readApi(ctx, path, now() + options.maxRetryTimeMs);
    const doubt = (problem: string) => new FatalError(`the server's list of imports cannot be believed: ${problem}`, 'unknown');
    if (reply.status === 404) throw doubt('it answered 404');
    const page = PageSchema.safeParse(reply.body);
    if (!page.success) throw doubt(shapeProblem(page.error));
    if (page.data.data.length > size) throw doubt(`it holds ${page.data.data.length} imports, more than the ${size} asked for`);
    for (const body of page.data.data) {
      const found = believedImport(body, 'an import of the list');
      io.stdout.write(`${options.json ? printableJson(body) : printable(importLine(found))}\n`);
      after = found.id;
      shown += 1;
    }
    if (!page.data.has_more) break;
    if (page.data.data.length === 0) throw doubt('a page says more imports follow but holds none');
  }
  if (shown === 0) io.stderr.write('note: the account has no imports (yet, or any more: an import is kept 30 days, by default, after it ended)\n');
  return 0;
}
