import { z } from 'zod';
import { CATALOGUE_PAGE_MAX, CATALOGUE_ROW_SCHEMAS } from '../../shared/api-schemas/catalogue-rows.js';
import type { ApiContext } from './api-context.js';
import type { CatalogueListOptions } from './catalogue-args.js';
import { shapeProblem } from './check-reply.js';
import type { CliIo } from './cli-io.js';
import { FatalError } from './fatal-error.js';
import { printableJson } from './printable.js';
import { readApi } from './read-api.js';
import { csvHeader, csvLine } from './row-csv.js';

/** The page's path, relative to the base URL: the largest page, the filters, the cursor. */
function pagePath(options: CatalogueListOptions, after: string | undefined): string {
  const query = new URLSearchParams({ limit: String(CATALOGUE_PAGE_MAX) });
  if (options.externalId !== undefined) query.set('external_id', options.externalId);
  if (options.updatedSince !== undefined) query.set('updated_since', options.updatedSince);
  if (options.archived) query.set('archived', 'true');
  if (after !== undefined) query.set('starting_after', after);
  return `v1/api/${options.kind}?${query.toString()}`;
}

/**
 * Writes to stdout, waiting while it is full, so that a catalogue piped to a slow reader never
 * piles up here. note: a reader that stops early (`| head`) closes the pipe: `closed` then, and
 * the list stops there, as a command line's does, rather than dying of the unheard EPIPE.
 */
class RowWriter {
  closed = false;
  private failure: Error | undefined;
  private readonly onError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') this.closed = true;
    else this.failure ??= error;
  };

  constructor(private readonly out: NodeJS.WritableStream & { destroyed?: boolean }) {
    out.on('error', this.onError);
  }

  async write(text: string): Promise<void> {
    if (this.failure !== undefined) throw new FatalError(`cannot write to stdout: ${this.failure.message}`, 'unknown');
    if (this.closed || this.out.write(text) || this.out.destroyed === true) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.out.off('drain', done);
        this.out.off('error', done);
        resolve();
      };
      this.out.on('drain', done);
      this.out.on('error', done);
    });
  }

  release(): void {
    this.out.off('error', this.onError);
  }
}

/**
 * `bulk-import listings|machines list`: every row of the account that matches, oldest first,
 * following `has_more` and `starting_after` a page at a time, each page printed as it arrives and
 * then let go, so that no more than one page is ever held. NDJSON prints each row as the server
 * sent it; CSV the fields of the resource, a header first.
 *
 * note: a page is believed only when it is of the documented shape, holds no more rows than
 * asked, and its ids come after the cursor in order (the API's order): a server that sent a page
 * again would otherwise be followed for ever.
 */
export async function listRows(ctx: ApiContext, options: CatalogueListOptions, io: CliIo): Promise<number> {
  const out = new RowWriter(io.stdout);
  try {
    return await listPages(ctx, options, io, out);
  } finally {
    out.release();
  }
}

async function listPages(ctx: ApiContext, options: CatalogueListOptions, io: CliIo, out: RowWriter): Promise<number> {
  const now = ctx.now ?? Date.now;
  const rowSchema = CATALOGUE_ROW_SCHEMAS[options.kind];
  const pageSchema = z.object({ data: z.array(z.unknown()), has_more: z.boolean() });
  const columns = Object.keys(rowSchema.shape);
  const doubt = (problem: string) => new FatalError(`the server's list of ${options.kind} cannot be believed: ${problem}`, 'unknown');
  let after: string | undefined;
  let shown = 0;
  if (options.format === 'csv') await out.write(csvHeader(columns));
  for (;;) {
    const reply = await readApi(ctx, pagePath(options, after), now() + options.maxRetryTimeMs);
    if (reply.status === 404) throw doubt('it answered 404');
    const page = pageSchema.safeParse(reply.body);
    if (!page.success) throw doubt(shapeProblem(page.error));
    if (page.data.data.length > CATALOGUE_PAGE_MAX) throw doubt(`a page holds ${page.data.data.length} rows, more than the ${CATALOGUE_PAGE_MAX} asked for`);
    for (const [position, body] of page.data.data.entries()) {
      const row = rowSchema.safeParse(body);
      if (!row.success) throw doubt(`data[${position}]: ${shapeProblem(row.error)}`);
      const id = row.data.id.toLowerCase();
      if (after !== undefined && id <= after) throw doubt(`row ${row.data.id} does not come after ${after}`);
      await out.write(options.format === 'csv' ? csvLine(columns, row.data) : `${printableJson(body)}\n`);
      if (out.closed) return 0;
      after = id;
      shown += 1;
    }
    if (!page.data.has_more) break;
    if (page.data.data.length === 0) throw doubt('a page says more rows follow but holds none');
  }
  if (shown === 0) io.stderr.write(`note: no ${options.archived ? 'archived' : 'active'} ${options.kind} of the account match\n`);
  return 0;
}
