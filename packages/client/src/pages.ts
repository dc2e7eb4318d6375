import type { ImportErrorRow, Import, StoredRows } from './api-types.js';
import type { RowKind } from './attempt-client.js';
import { expectAnswer, type ClientCore } from './client-core.js';
import { ReplyError } from './errors/reply-error.js';
import { importPath } from './reads.js';

interface Page<Item> {
  data: Item[];
  has_more: boolean;
}

/**
 * Every item of a cursor-paged list, fetched a page at a time as the caller iterates: one page
 * is held at once. `pathOf` gives a page's path after the cursor (undefined: the first page).
 * note: a page that says more follow but holds none, or ends where the one before it ended (a
 * server that ignores the cursor), would be followed for ever: ReplyError.
 */
async function* itemsOf<Item, Cursor>(core: ClientCore, what: string, pathOf: (after: Cursor | undefined) => string, cursorOf: (item: Item) => Cursor): AsyncGenerator<Item, void, undefined> {
  let after: Cursor | undefined;
  for (;;) {
    const previous = after;
    const path = pathOf(after);
    const { body } = await expectAnswer<Page<Item>>(core, () => core.attempts.get(path), { idempotent: true }, [200], what);
    if (!Array.isArray(body.data) || typeof body.has_more !== 'boolean') throw new ReplyError(200, `${what}: a page is not { data, has_more }`);
    for (const item of body.data) {
      yield item;
      after = cursorOf(item);
    }
    if (!body.has_more) return;
    if (body.data.length === 0) throw new ReplyError(200, `${what}: a page says more follow but holds none`);
    if (after === previous) throw new ReplyError(200, `${what}: a page ends where the one before it ended`);
  }
}

const query = (entries: Record<string, string | undefined>) =>
  new URLSearchParams(Object.entries(entries).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();

/** GET /v1/api/imports/{id}/errors: the import's failed rows, in index order (`pageSize` up to 1,000). */
export function importErrors(core: ClientCore, id: string, options: { pageSize?: number } = {}): AsyncGenerator<ImportErrorRow, void, undefined> {
  const limit = String(options.pageSize ?? 1_000);
  return itemsOf<ImportErrorRow, number>(core, 'GET /v1/api/imports/{id}/errors', (after) => `${importPath(id)}/errors?${query({ limit, starting_after: after?.toString() })}`, (row) => row.index);
}

/** GET /v1/api/imports: the account's imports, newest first (`pageSize` up to 100). */
export function listImports(core: ClientCore, options: { pageSize?: number } = {}): AsyncGenerator<Import, void, undefined> {
  const limit = String(options.pageSize ?? 100);
  return itemsOf<Import, string>(core, 'GET /v1/api/imports', (after) => `v1/api/imports?${query({ limit, starting_after: after })}`, (found) => found.id);
}

export interface ListRowsOptions {
  /** only the row with this `external_id` */
  externalId?: string;
  /** only rows changed at or after this ISO 8601 time */
  updatedSince?: string;
  /** the archived rows instead of the active ones */
  archived?: boolean;
  /** rows a page, up to 100 (the default) */
  pageSize?: number;
}

/** GET /v1/api/{kind}: the account's rows as stored, oldest first. */
export function listRows<K extends RowKind>(core: ClientCore, kind: K, options: ListRowsOptions = {}): AsyncGenerator<StoredRows[K], void, undefined> {
  const filters = {
    limit: String(options.pageSize ?? 100),
    external_id: options.externalId,
    updated_since: options.updatedSince,
    archived: options.archived === true ? 'true' : undefined,
  };
  return itemsOf<StoredRows[K], string>(core, `GET /v1/api/${kind}`, (after) => `v1/api/${kind}?${query({ ...filters, starting_after: after })}`, (row) => row.id);
}
