import type { ImportKind } from '../import/import-kinds.js';
import type { Sql } from '../infra/db.js';
import type { Page } from './import-lookups.js';

/**
 * The statements that read an account's rows back (docs/catalogue.md#reading-rows-back): one row,
 * and a page of them in id order. Every statement is scoped to the account, so another account's
 * row is found exactly as an unknown one: not at all.
 */

/** A row's times, as read. */
interface RowTimes {
  created_at: Date;
  /** coalesce(updated_at, created_at): a row that never changed has no updated_at */
  updated_at: Date;
  archived_at: Date | null;
}

/** A listing as stored, under its column names (the resource's). */
export interface ListingRecord extends RowTimes {
  id: string;
  external_id: string | null;
  title: string;
  description: string;
  currency: 'USD';
  price_cents: number;
  category: string;
  material: string;
  photo_urls: string[];
  color: string | null;
  tags: string[];
  print_time_hours: number | null;
  is_available: boolean;
  allows_custom_orders: boolean;
  thumbnail_url: string;
  maker_name: string;
  maker_photo_url: string | null;
}

/** A machine as stored, under its column names. */
export interface MachineRecord extends RowTimes {
  id: string;
  external_id: string | null;
  template_id: string;
  category: string;
  manufacturer: string;
  model: string;
  model_number: string | null;
  nickname: string | null;
  capabilities: string[];
  is_skill_station: boolean;
  verification_status: 'pending' | 'verified' | 'rejected';
}

export interface CatalogueRecords {
  listings: ListingRecord;
  machines: MachineRecord;
}

const TIMES = 'created_at, coalesce(updated_at, created_at) as updated_at, archived_at';

/** Each kind's own fields, in the resource's order, before the times every row carries (ROW_TIMES). */
export const ROW_FIELDS: Record<ImportKind, string> = {
  listings: `id, external_id, title, description, currency, price_cents, category, material, photo_urls, color, tags,
    print_time_hours, is_available, allows_custom_orders, thumbnail_url, maker_name, maker_photo_url`,
  machines: `id, external_id, template_id, category, manufacturer, model, model_number, nickname, capabilities,
    is_skill_station, verification_status`,
};

/**
 * The columns each kind reads, in the resource's order. note: constants of this file, never
 * input, so sql.unsafe is safe here; the table is named by its kind, one of two constants.
 */
const COLUMNS: Record<ImportKind, string> = {
  listings: `${ROW_FIELDS.listings}, ${TIMES}`,
  machines: `${ROW_FIELDS.machines}, ${TIMES}`,
};

export const TABLES: Record<ImportKind, string> = { listings: 'listings', machines: 'machines' };

/** One row of the account, active or archived; undefined when the account has none with that id. */
export async function findCatalogueRow<K extends ImportKind>(sql: Sql, kind: K, accountId: string, id: string): Promise<CatalogueRecords[K] | undefined> {
  const table: string = TABLES[kind];
  const [found] = await sql<CatalogueRecords[K][]>`
    select ${sql.unsafe(COLUMNS[kind])} from ${sql(table)}
    where id = ${id}::uuid and account_id = ${accountId}`;
  return found;
}

/** The filters a list and an export share (docs/catalogue.md#reading-rows-back). */
export interface CatalogueFilters {
  /** only the rows created, changed, archived or restored at or after it */
  updatedSince?: Date;
  /** only archived rows (true) or only active ones (false) */
  archived: boolean;
}

/** What a page of rows is: where it starts, its size, and the filters (docs/catalogue.md#reading-rows-back). */
export interface CataloguePageRequest extends CatalogueFilters {
  limit: number;
  /** a position: the page starts after this id, whether or not a row has it */
  startingAfter?: string;
  /** only the row with this external_id, as stored */
  externalId?: string;
}

/**
 * The conditions of the account's rows that pass `filters`, the account and the time written by
 * `valueOf` (a parameter's `$n`, or a literal). note: the account is matched as `= any(array[...])`
 * for the planner's sake (cataloguePageStatement).
 */
export function catalogueConditions(filters: CatalogueFilters, valueOf: (value: string | Date) => string, accountId: string): string[] {
  const conditions = [`account_id = any(array[${valueOf(accountId)}::uuid])`, filters.archived ? 'archived_at is not null' : 'archived_at is null'];
  if (filters.updatedSince !== undefined) conditions.push(`coalesce(updated_at, created_at) >= ${valueOf(filters.updatedSince)}::timestamptz`);
  return conditions;
}

/** A statement and its parameters, `$1` to `$n`. */
export interface Statement {
  text: string;
  parameters: (string | number | Date)[];
}

/**
 * The statement of a page, `limit + 1` rows (one more than asked says whether there is more).
 * Exported so that the tests can EXPLAIN the very statement sent.
 *
 * note: each page reads an index of migration 0014 or 0005, so that no page reads another
 * account's rows, nor the account's whole catalogue to find a page: `(account_id, id)` walked
 * from the cursor in id order and stopping after the page (active rows); its partial copy that
 * holds only archived rows (`archived_at is not null`, written as the index's predicate);
 * `(account_id, external_id)` for one external id; `(account_id, coalesce(updated_at,
 * created_at))` when few rows changed since the time, which the planner weighs against walking the
 * ids by the statistics of that expression. The account is matched as `= any(array[...])` and the
 * rows ordered by `(account_id, id)`, so that only those indexes give the order. With `account_id
 * = $1` the planner counts the account as settled and the primary key as giving the same order,
 * and takes it for an account holding most of a table: walked in id order and filtered by account,
 * it reads every later row of the other accounts to learn that no row follows (all 20,000 of the
 * other account's, for the last page in the plans' test). Now the primary key gives the order only
 * by sorting every row of the table after the cursor, which the planner chooses only when those
 * are few. `starting_after` compares ids, not a place looked up first: a deleted row's id still
 * orders. The columns and the table are constants of this file, never input.
 */
export function cataloguePageStatement(kind: ImportKind, accountId: string, page: CataloguePageRequest): Statement {
  const parameters: Statement['parameters'] = [page.limit + 1];
  const conditions = catalogueConditions(page, (value) => `$${parameters.push(value)}`, accountId);
  if (page.startingAfter !== undefined) conditions.push(`id > $${parameters.push(page.startingAfter)}::uuid`);
  if (page.externalId !== undefined) conditions.push(`external_id = $${parameters.push(page.externalId)}`);
  return {
    text: `select ${COLUMNS[kind]} from ${TABLES[kind]} where ${conditions.join(' and ')} order by account_id, id limit $1`,
    parameters,
  };
}

/**
 * A page of the account's rows of `kind`, oldest first (id order).
 * note: sent unprepared (an unnamed statement), so that PostgreSQL plans every page with its own
 * values. A prepared statement is planned for any values after its fifth use, when that plan looks
 * no dearer, and such a plan cannot tell a time few rows changed since (read them through the
 * time's index) from one most rows did (walk the ids): the plans' test finds it walking the ids
 * of a whole catalogue for a page of `updated_since`.
 */
export async function listCatalogueRows<K extends ImportKind>(sql: Sql, kind: K, accountId: string, page: CataloguePageRequest): Promise<Page<CatalogueRecords[K]>> {
  const { text, parameters } = cataloguePageStatement(kind, accountId, page);
  const rows = (await sql.unsafe(text, parameters, { prepare: false })) as unknown as CatalogueRecords[K][];
  return { data: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}
