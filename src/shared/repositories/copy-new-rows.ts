import type { Writable } from 'node:stream';
import type { TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import { copyText } from '../import/copy-rows.js';
import { ROW_COLUMNS } from '../rows/row-columns.js';
import { handOverCopyEnd, importedColumns, insertImportRecord, type ImportingAccount, type ImportStatementOutcome } from './imports.js';
import type { ImportOfRequest } from './import-records.js';

/**
 * An import whose rows can only be new (none carries an `external_id`, so none can match a row
 * the account has) written with one `COPY` straight into its table, as a service without a queue
 * would write it: no table of copied rows to fill and read again, no statement around the insert.
 * PostgreSQL spends about a fifth less on such an import (bench/README.md, issue 43).
 */

const LINE_END = 0x0a;

/** The columns a `COPY` of an import's new rows names: the account, the import's own (importedColumns), then the row's. */
function copiedColumns(kind: ImportKind): string {
  const imported = importedColumns(kind, { importId: '', makerName: '', makerPhoto: '', pending: '' });
  return ['account_id', ...Object.keys(imported), ...Object.keys(ROW_COLUMNS[kind])].join(', ');
}

/** The `COPY` text of the columns copiedColumns names before the row's own, a tab after each. */
function importedText(kind: ImportKind, importId: string, accountId: string, account: ImportingAccount): string {
  const imported = importedColumns(kind, {
    importId: copyText(importId),
    makerName: copyText(account.displayName),
    makerPhoto: account.avatarUrl === null ? '\\N' : copyText(account.avatarUrl),
    pending: 'pending',
  });
  return `${[copyText(accountId), ...Object.values(imported)].join('\t')}\t`;
}

/** How many rows `COPY` text holds: a line each, the last one with or without its line end. */
export function copyLineCount(rows: Uint8Array): number {
  let lines = 0;
  for (let at = rows.indexOf(LINE_END); at !== -1; at = rows.indexOf(LINE_END, at + 1)) lines += 1;
  return rows.length > 0 && rows[rows.length - 1] !== LINE_END ? lines + 1 : lines;
}

/** Each line of `rows` with `before` in front of it, every line ended. */
function eachLineAfter(before: string, rows: Uint8Array): Buffer {
  const head = Buffer.from(before);
  const parts: Uint8Array[] = [];
  let start = 0;
  for (let end = rows.indexOf(LINE_END); end !== -1; end = rows.indexOf(LINE_END, start)) {
    parts.push(head, rows.subarray(start, end + 1));
    start = end + 1;
  }
  if (start < rows.length) parts.push(head, rows.subarray(start), Buffer.of(LINE_END));
  return Buffer.concat(parts);
}

/**
 * Copies an import's new rows (copy-rows.ts encodeCopyRows, as bytes) into their table, each with
 * its account, its import and its maker, then records the import (insertImportRecord), in the
 * caller's transaction; or writes nothing: not when the account is gone, nor when the rows are not
 * exactly `rowCount`, nor when the import is recorded already (`recorded` false, and the caller
 * commits nothing). Exactly once, as recordImportWithRows: an import recorded before is seen
 * before anything is copied; one whose transaction commits while this one copies makes the
 * record's insert wait for it, find it, and report `taken`, whose rows the caller rolls back.
 *
 * note: the account is read (and held: `for key share`, as every row's foreign key holds it
 * anyway) in the round trip that starts the `COPY`; the rows follow with the record's insert
 * behind them, which fails with 25P02 when `COPY` refused them (isCopyRefused). The row count is
 * the lines sent: `COPY` writes each line or fails.
 */
export async function copyNewRows(
  tx: TransactionSql,
  input: ImportOfRequest & { rowCount: number; rows: Uint8Array },
): Promise<ImportStatementOutcome & { taken?: boolean }> {
  const { kind, importId, accountId, rowCount, rows } = input;
  const sent = copyLineCount(rows);
  const reading = tx<(ImportingAccount & { recorded: boolean })[]>`
    select display_name as "displayName", avatar_url as "avatarUrl", exists (select from imports where job_id = ${importId}) as recorded
    from accounts where id = ${accountId} for key share`.execute();
  const writable = await startNewRowsCopy(tx, kind);
  const [account] = await reading;
  const nothing = { sent, inserted: 0, updated: 0, recorded: false, accountFound: account !== undefined };
  if (account === undefined || account.recorded || sent !== rowCount) {
    await handOverCopyEnd(writable);
    return nothing;
  }
  await sendNewRows(writable, { kind, importId, accountId, account }, rows);
  if (!(await insertImportRecord(tx, input))) return { ...nothing, taken: true };
  return { sent, inserted: sent, updated: 0, recorded: true, accountFound: true };
}

/** Starts a `COPY` straight into `kind`'s table of the import's own columns, then the row's (sendNewRows). */
export function startNewRowsCopy(tx: TransactionSql, kind: ImportKind): Promise<Writable> {
  return tx.unsafe(`copy ${kind} (${copiedColumns(kind)}) from stdin`).writable();
}

/**
 * Sends `rows` (`COPY` text) on a `COPY` startNewRowsCopy began, each line with the import's own
 * columns in front of it, and the `COPY`'s end (handOverCopyEnd). note: the statement after it
 * fails with 25P02 when `COPY` refused them (isCopyRefused).
 */
export function sendNewRows(writable: Writable, by: { kind: ImportKind; importId: string; accountId: string; account: ImportingAccount }, rows: Uint8Array): Promise<void> {
  return handOverCopyEnd(writable, eachLineAfter(importedText(by.kind, by.importId, by.accountId, by.account), rows));
}
