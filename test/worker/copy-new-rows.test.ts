import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/shared/infra/db.js';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { encodeCopyRows } from '../../src/shared/import/copy-rows.js';
import { copyLineCount } from '../../src/shared/repositories/copy-new-rows.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../src/shared/rows/machine-row.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { insertAccount, openTestPool, type TestPool } from '../support/database-with-account.js';
import { validListing, validMachine } from '../support/fixtures.js';
import { statementLoggingPool } from '../support/statement-log.js';
import { stageInChunks } from '../support/staged-file.js';
import { stagedRow } from '../../src/shared/repositories/import-files.js';
import { writeFileChunk } from '../../src/worker/write-file-chunk.js';

/**
 * An import whose rows carry no external_id is copied straight into its table (copy-new-rows.ts);
 * one matched on external_id goes through the table of copied rows and one statement. The rows
 * they leave must be the same, column for column, whatever the text and the maker hold.
 */

/** Text that `COPY` escapes (tab, line break, carriage return, backslash), beside quotes, commas and braces. */
const AWKWARD = 'tab\there, line\nbreak, cr\rreturn, back\\slash, "quoted", {braced}, comma, N, \\N, ünïcødé 🐉';

/** The same, short enough for a tag or a capability. */
const AWKWARD_ITEM = 'a\tb "c" d\\e {f},g\nh N';

const listings = () => [
  ListingRowSchema.parse(validListing({ description: AWKWARD, tags: [AWKWARD_ITEM, 'plain'], color: null })),
  ListingRowSchema.parse(validListing({ title: `title ${AWKWARD}`.slice(0, 100), photo_urls: ['https://cdn.example.test/a%5Cb.jpg?x="y"'], print_time_hours: 2.25, is_available: false })),
];
const machines = () => [MachineRowSchema.parse(validMachine({ nickname: AWKWARD, capabilities: [AWKWARD_ITEM, 'x'] })), MachineRowSchema.parse(validMachine())];

/**
 * Rows of two writes of the same input, to compare: in one order, without the titles and template
 * ids the fixtures number (they differ between the two writes).
 */
function comparable(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map(({ title: _title, template_id: _template, ...rest }) => rest).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

const MAKER_NAME = 'Maker\twith a tab, a back\\slash and a\nline break';
const MAKER_PHOTO = 'https://cdn.example.test/maker\\photo.png';

describe('new rows copied straight into their table', () => {
  let pool: TestPool;
  let accountId: string;
  let statements: string[];
  let watched: Sql;

  beforeAll(async () => {
    pool = await openTestPool();
    // note: the maker's name and photo go into every listing's line: they too must be escaped.
    accountId = await insertAccount(pool.sql, MAKER_NAME, MAKER_PHOTO);
    ({ sql: watched, sent: statements } = await statementLoggingPool(pool.sql));
  });
  afterAll(async () => {
    await watched?.end();
    await pool?.close();
  });

  /** Each statement sent since the last write began, by its first two words (`copy listings`). */
  const begun = () => statements.map((query) => query.trim().split(/\s+/).slice(0, 2).join(' '));

  async function write(kind: ImportKind, rows: readonly object[], matchExternalIds: boolean): Promise<string> {
    const input: ImportWrite = {
      importId: randomUUID(), kind, accountId, requestId: 'copy-new-rows-test', total: rows.length, errors: [], rowCount: rows.length,
      matchExternalIds, rows: new TextEncoder().encode(encodeCopyRows(kind, rows as never)),
    };
    statements.length = 0;
    const result = await writeImport(watched, input);
    expect(result.inserted).toBe(rows.length);
    return input.importId;
  }

  /** Every column of an import's rows but those that differ by nature (ids, times, the import). */
  async function rowsOf(kind: ImportKind, importId: string): Promise<Record<string, unknown>[]> {
    const rows = await pool.sql<Record<string, unknown>[]>`select * from ${pool.sql(kind)} where import_job_id = ${importId} `;
    return rows.map(({ id: _id, import_job_id: _import, created_at: _created, updated_at: _updated, ...columns }) => columns);
  }

  it.each([
    ['listings', listings],
    ['machines', machines],
  ] as const)('leaves %s as the statement through the table of copied rows leaves them', async (kind, rows) => {
    const sent = rows();
    const straight = await write(kind, sent, false);
    expect(begun()).toContain(`copy ${kind}`);
    const through = await write(kind, rows(), true);
    expect(begun()).toContain(`copy import_copied_${kind}`);
    const [straightRows, throughRows] = [await rowsOf(kind, straight), await rowsOf(kind, through)];
    expect(straightRows).toHaveLength(2);
    expect(comparable(straightRows)).toEqual(comparable(throughRows));
    const first = sent[0] as unknown as Record<string, unknown>;
    expect(straightRows).toContainEqual(expect.objectContaining(
      kind === 'listings'
        ? { description: first.description, tags: first.tags, maker_name: MAKER_NAME, maker_photo_url: MAKER_PHOTO }
        : { nickname: first.nickname, capabilities: first.capabilities, verification_status: 'pending' },
    ));
  });

  it('leaves the rows of a file chunk that carry no external_id as the statement leaves them', async () => {
    const sent = listings();
    const fileImport = randomUUID();
    await pool.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${fileImport}, ${accountId}, 'listings', 'copy-new-rows-test', ${sent.length}, 0, 0, '[]', 'queued', 'file', now())`;
      await stageInChunks(tx, fileImport, sent.map((row, index) => stagedRow(index, row)), 10);
    });
    statements.length = 0;
    expect(await writeFileChunk(watched, fileImport)).toMatchObject({ state: 'written', rows: 2, changed: 2 });
    expect(begun()).toContain('copy listings');
    expect(begun()).not.toContain('copy import_copied_listings');
    const through = await write('listings', listings(), true);
    expect(comparable(await rowsOf('listings', fileImport))).toEqual(comparable(await rowsOf('listings', through)));
  });

  it('writes a last line that has no line end', async () => {
    const text = encodeCopyRows('listings', listings());
    const input: ImportWrite = {
      importId: randomUUID(), kind: 'listings', accountId, requestId: 'copy-new-rows-test', total: 2, errors: [], rowCount: 2, rows: new TextEncoder().encode(text.slice(0, -1)),
    };
    expect(await writeImport(pool.sql, input)).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await rowsOf('listings', input.importId)).toHaveLength(2);
  });
});

describe('copyLineCount', () => {
  it.each([
    ['', 0],
    ['a\n', 1],
    ['a', 1],
    ['a\nb', 2],
    ['a\nb\n', 2],
    ['a\\nb\n', 1],
  ])('counts %j as %i rows', (text, rows) => {
    expect(copyLineCount(new TextEncoder().encode(text))).toBe(rows);
  });
});
