import { z } from 'zod';
import type { ApiContext } from './api-context.js';
import { ReplyRowErrorSchema, shapeProblem, type ReplyRowError } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import { importPath } from './import-resource.js';
import { readApi } from './read-api.js';

const ErrorPageSchema = z.object({ data: z.array(ReplyRowErrorSchema), has_more: z.boolean() });

/** The most rows one page may hold (the API's own limit): fewest requests. */
const PAGE_SIZE = 1_000;

export interface ImportErrorsRead {
  ctx: ApiContext;
  importId: string;
  /** no wait ends past it (ctx.now's clock) */
  deadline: number;
  /** each page's rows, in index order, before the next page is asked for */
  onPage(rows: ReplyRowError[]): Promise<void>;
  /** more rows than this cannot be believed (the rows the import received, when known) */
  maxRows?: number;
}

/**
 * Reads every failed row of an import, page by page (GET /v1/api/imports/{id}/errors), and
 * returns how many there were, or 'not-found' (404). note: the pages are believed only while
 * every index is greater than the one before it and a page that says more follow holds some:
 * otherwise the list could repeat a row or never end.
 */
export async function readImportErrors(read: ImportErrorsRead): Promise<number | 'not-found'> {
  const { ctx, importId } = read;
  const doubt = (problem: string) => new FatalError(`the server's list of the failed rows of import ${importId} cannot be believed: ${problem}`, 'unknown');
  let last: number | undefined;
  let count = 0;
  for (;;) {
    const query = `limit=${PAGE_SIZE}${last === undefined ? '' : `&starting_after=${last}`}`;
    const reply = await readApi(ctx, `${importPath(importId)}/errors?${query}`, read.deadline);
    if (reply.status === 404) {
      if (last === undefined) return 'not-found';
      throw doubt(`it answered 404 after ${count} rows`);
    }
    const page = ErrorPageSchema.safeParse(reply.body);
    if (!page.success) throw doubt(shapeProblem(page.error));
    for (const { index } of page.data.data) {
      if (last !== undefined && index <= last) throw doubt(`row ${index} comes after row ${last}`);
      last = index;
    }
    count += page.data.data.length;
    if (read.maxRows !== undefined && count > read.maxRows) throw doubt(`it lists more than the ${read.maxRows} rows of the import`);
    await read.onPage(page.data.data);
    if (!page.data.has_more) return count;
    if (page.data.data.length === 0) throw doubt('a page says more rows follow but holds none');
  }
}
