import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { replayAccount } from '../../bench/lib/soak-catalogue-check.js';
import { newFindings, type CatalogueFindings } from '../../bench/lib/soak-catalogue-findings.js';
import type { CatalogueOp, MirrorFacts, TableRow } from '../../bench/lib/soak-catalogue-log.js';
import { checkRows, type LedgerEntry } from '../../bench/lib/soak-check.js';
import { runSoak } from '../../bench/lib/soak-run.js';
import { partStarter, type PartStarter } from '../../bench/lib/soak-stack.js';
import { createAccount } from '../../src/shared/repositories/accounts.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));

/**
 * `npm run soak` in short: the same code for a minute, a worker SIGKILLed every 10 s (workers
 * give a dead peer's job up after 2 s here), 15 % of requests hung up, two slow file uploads
 * trickling their rows, one client sending hostile files (8 MiB each here), and two catalogue
 * accounts each kept by a client of its own with upserts, merges, archives, deletes and mirrors
 * (writes sent while each mirror's file arrives). The 15-minute run is `npm run soak`
 * (bench/README.md).
 */
describe('soak: imports under worker kills and client hang-ups', () => {
  let scenario: FaultScenario | undefined;
  let parts: PartStarter | undefined;

  afterEach(async () => {
    await parts?.stopAll();
    await scenario?.close();
    parts = undefined;
    scenario = undefined;
  });

  it('writes every row of every import answered 201 exactly once, answers every import 201, and removes only what a mirror left out and nothing wrote since its upload began', async () => {
    scenario = await createFaultScenario();
    parts = partStarter(scenario.env, {});
    mkdirSync(ARTIFACTS, { recursive: true });
    const logFile = `${ARTIFACTS}soak-${new Date().toISOString().replace(/[:.]/g, '-')}.log`;
    const summary = await runSoak({
      stack: { env: scenario.env, sql: scenario.sql, startApi: parts.startApi, startWorker: parts.startWorker },
      durationMs: 60_000,
      clients: 6,
      accounts: 2,
      workers: 3,
      killEveryMs: 10_000,
      aimedKillEvery: 2,
      hangUpShare: 0.15,
      unservedAfterMs: 30_000,
      cappedLimitMs: 20_000,
      pauseMs: 300,
      drainWithinMs: 30_000,
      slowUploads: 2,
      slowUnservedAfterMs: 60_000,
      hostileSenders: 1,
      hostileBytes: 8 * 1024 * 1024,
      hostilePauseMs: 1_000,
      catalogueAccounts: 2,
      logFile,
    });
    const { details, accounts, ...numbers } = summary;
    // note: the whole story on failure: the failures, the counts, and each failing import's
    // requests and log lines (the processes' full output is in the log file).
    const story = JSON.stringify({ ...numbers, accounts: accounts.map(({ capped_timeline: _, ...a }) => a), details }, null, 2);
    console.info(
      `soak: ${summary.imports.answered_201} of ${summary.imports.attempted} imports answered 201, ${summary.rows.expected} rows, ` +
        `${summary.workers.kills} kills, ${summary.requests.hang_ups_with_reset} of ${Object.values(summary.requests.hang_ups).reduce((a, b) => a + b, 0)} hang-ups with a reset, ` +
        `requests ${JSON.stringify(summary.requests.by_outcome)}; ${summary.slow_uploads.answered_202} slow uploads answered 202, ` +
        `hostile ${JSON.stringify(Object.fromEntries(Object.entries(summary.hostile_uploads.by_kind).map(([kind, r]) => [kind, r.answers])))}; log ${logFile}`,
    );
    const { catalogue } = summary;
    const answered = (type: keyof typeof catalogue.writes) => catalogue.writes[type].answered;
    console.info(
      `soak catalogue: mirrors ${JSON.stringify(catalogue.mirrors)}; answered: ${answered('upsert')} upserts, ${answered('merge')} merges, ${answered('archive')} archives, ${answered('delete')} deletes ` +
        `(${catalogue.writes_during_uploads.answered} of them while a mirror's file arrived); ${catalogue.rows_removed_by_mirrors} rows removed by mirrors (${catalogue.removals_as_modelled} as the model expected), ` +
        `${catalogue.kept_by_writes_during_upload} kept by a write during the upload, ${catalogue.removed_after_unchanged_resend} removed despite an unchanged one; ` +
        `wrong removals ${catalogue.problems.wrongRemovals.count}, lost ${catalogue.problems.lost.count}, duplicated ${catalogue.problems.duplicated.count}, ambiguous rows ${catalogue.ambiguous_rows.count}`,
    );
    expect(summary.rows.lost, story).toBe(0);
    expect(summary.rows.duplicated, story).toBe(0);
    expect(summary.rows.writtenWithout201, story).toBe(0);
    expect(summary.imports.unserved + summary.imports.refused, story).toBe(0);
    expect(summary.slow_uploads.unserved + summary.slow_uploads.refused, story).toBe(0);
    expect(summary.slow_uploads.rows.lost + summary.slow_uploads.rows.duplicated, story).toBe(0);
    expect(catalogue.problems.wrongRemovals.count, story).toBe(0);
    expect(catalogue.problems.lost.count, story).toBe(0);
    expect(catalogue.problems.duplicated.count, story).toBe(0);
    expect(summary.failures, story).toEqual([]);
    // It did what it claims: imports served, workers killed, requests hung up at each moment.
    expect(summary.imports.answered_201).toBeGreaterThan(50);
    expect(summary.workers.kills).toBeGreaterThanOrEqual(4);
    expect(Object.values(summary.requests.hang_ups).every((n) => n > 0), JSON.stringify(summary.requests.hang_ups)).toBe(true);
    expect(summary.slow_uploads.answered_202).toBeGreaterThanOrEqual(4);
    expect(Object.values(summary.hostile_uploads.by_kind).every((r) => r.refused_as_expected > 0 && r.unexpected === 0), JSON.stringify(summary.hostile_uploads.by_kind)).toBe(true);
    // And the catalogue's: mirrors of each mode that removed rows, some held, every kind of write answered, the race of K.6 met both ways.
    expect(catalogue.mirrors.archive.done ?? 0, JSON.stringify(catalogue.mirrors)).toBeGreaterThanOrEqual(2);
    expect(catalogue.mirrors.delete.done ?? 0, JSON.stringify(catalogue.mirrors)).toBeGreaterThanOrEqual(2);
    expect((catalogue.mirrors.archive.held ?? 0) + (catalogue.mirrors.delete.held ?? 0), JSON.stringify(catalogue.mirrors)).toBeGreaterThanOrEqual(1);
    for (const type of ['merge', 'archive', 'delete'] as const) expect(answered(type), type).toBeGreaterThanOrEqual(2);
    expect(catalogue.removals_as_modelled).toBeGreaterThanOrEqual(10);
    expect(catalogue.kept_by_writes_during_upload).toBeGreaterThanOrEqual(2);
    expect(catalogue.removed_after_unchanged_resend).toBeGreaterThanOrEqual(2);
  }, 170_000);
});

describe('soak: the checks of the tables', () => {
  let database: TestDatabase | undefined;
  let sql: postgres.Sql | undefined;

  afterEach(async () => {
    await sql?.end({ timeout: 5 });
    await database?.drop();
    sql = undefined;
    database = undefined;
  });

  it('report a row written twice, a row missing, rows of an import never answered, an invalid row written and a row nobody sent', async () => {
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const account = await createAccount(sql, { displayName: 'Checks', tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
    const db = sql;
    const write = async (...titles: string[]) => {
      for (const title of titles) {
        await db`
          insert into listings (account_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
          values (${account.id}, ${title}, 'd', 1, 'USD', 'miniatures', 'PLA', ${['https://cdn.example.test/a.jpg']}, 'https://cdn.example.test/a.jpg', 'Checks')`;
      }
    };
    const ledger: LedgerEntry[] = [
      { key: 'clean', kind: 'listings', markerPrefix: 'soak-0-1', rows: 2, invalid: [], answered: true },
      { key: 'twice', kind: 'listings', markerPrefix: 'soak-0-2', rows: 2, invalid: [], answered: true },
      { key: 'missing', kind: 'listings', markerPrefix: 'soak-0-3', rows: 3, invalid: [1], answered: true },
      { key: 'never-answered', kind: 'listings', markerPrefix: 'soak-0-4', rows: 2, invalid: [], answered: false },
      { key: 'skipped-written', kind: 'listings', markerPrefix: 'soak-0-5', rows: 2, invalid: [0], answered: true },
    ];
    await write('soak-0-1-0', 'soak-0-1-1');
    await write('soak-0-2-0', 'soak-0-2-1', 'soak-0-2-1');
    await write('soak-0-3-0');
    await write('soak-0-4-0', 'soak-0-4-1');
    await write('soak-0-5-0', 'soak-0-5-1');
    await write('soak-9-9-0');

    const check = await checkRows(sql, ledger);

    expect(check).toMatchObject({
      expected: 2 + 2 + 2 + 1,
      found: 11,
      lost: 1,
      duplicated: 1,
      duplicatedRows: 1,
      writtenWithout201: 2,
      invalidWritten: 1,
      unknown: 1,
      unknownMarkers: ['soak-9-9-0'],
    });
    expect(check.problems.map((p) => [p.key, p.lost, p.duplicated.map((d) => [d.marker, d.copies]), p.writtenWithout201, p.invalidWritten])).toEqual([
      ['twice', [], [['soak-0-2-1', 2]], [], []],
      ['missing', ['soak-0-3-2'], [], [], []],
      ['never-answered', [], [], ['soak-0-4-0', 'soak-0-4-1'], []],
      ['skipped-written', [], [], [], ['soak-0-5-0']],
    ]);
  });
});

describe("soak: the check of the catalogue's removals", () => {
  // One account's log: five rows, E archived, then a mirror that leaves out C and D (C merged
  // while its file arrived: it stays; D sent again unchanged: it goes), then one its guard holds.
  const answered = (sentAt: number, answer: Record<string, number>) => ({ sentAt, answeredAt: sentAt + 10, end: 'answered' as const, answer });
  const row = (id: string, price: number) => ({ id, price });
  const active = (price: number): TableRow => ({ archived: false, price, copies: 1 });
  const archived = (price: number): TableRow => ({ archived: true, price, copies: 1 });
  const table = (rows: Record<string, TableRow>) => new Map(Object.entries(rows));
  const ends = { A: active(100), B: active(200), C: active(301), D: archived(400), E: archived(500) };

  function log(over: { raceMergeSentAt?: number; after?: Record<string, TableRow> } = {}): CatalogueOp[] {
    return [
      { type: 'upsert', rows: [row('A', 100), row('B', 200), row('C', 300), row('D', 400), row('E', 500)], requestIdPrefix: 'soak-cat0-1', ...answered(1_000, { inserted: 5, updated: 0, unchanged: 0, skipped: 0 }) },
      { type: 'archive', ids: ['E'], requestIdPrefix: 'soak-cat0-2', ...answered(1_100, { archived: 1, unchanged: 0, skipped: 0 }) },
      {
        type: 'mirror',
        missing: 'archive',
        maxRemoval: 100,
        meant: 'done',
        lines: [{ ...row('A', 100), valid: true }, { ...row('B', 200), valid: true }],
        race: [
          { type: 'merge', rows: [row('C', 301)], requestIdPrefix: 'soak-cat0-3-r1', ...answered(over.raceMergeSentAt ?? 2_100, { inserted: 0, updated: 1, unchanged: 0, skipped: 0 }) },
          { type: 'upsert', rows: [row('D', 400)], requestIdPrefix: 'soak-cat0-3-r2', ...answered(2_200, { inserted: 0, updated: 0, unchanged: 1, skipped: 0 }) },
        ],
        requestIdPrefix: 'soak-cat0-3',
        sentAt: 2_000,
        end: 'answered',
        completedSeenAt: 2_700,
        after: table(over.after ?? ends),
      },
      { type: 'mirror', missing: 'delete', maxRemoval: 10, meant: 'held', lines: [{ ...row('A', 100), valid: true }], race: [], requestIdPrefix: 'soak-cat0-4', sentAt: 3_000, end: 'answered', completedSeenAt: 3_700 },
    ];
  }
  const mirror = (requestId: string, at: number, removal: MirrorFacts['removal'], base: number, unchanged: number): MirrorFacts => ({
    importId: `import-${at}`,
    requestId,
    state: 'completed',
    beganAt: at + 5,
    acceptedAt: at + 500,
    finishedAt: at + 600,
    removal,
    base,
    counts: { inserted: 0, updated: 0, unchanged, skipped: 0 },
  });
  const facts = (firstRemoval: MirrorFacts['removal'] = { state: 'done', rows: 1 }) => [
    mirror('soak-cat0-3-a1', 2_000, firstRemoval, 4, 2),
    // note: B and C active, D and E archived, none on its line: 4 rows of a base of 3 (A, B, C) is more than 10 %.
    mirror('soak-cat0-4-a2', 3_000, { state: 'held', rows: 4 }, 3, 1),
  ];
  const check = (entries: CatalogueOp[], end: Record<string, TableRow>, mirrors = facts()) => {
    const findings = newFindings();
    replayAccount({ label: 'cat0', log: entries }, mirrors, table(end), findings);
    return findings;
  };
  const counts = (f: CatalogueFindings) => ({
    wrongRemovals: f.wrongRemovals.length,
    lost: f.lost.length,
    notRemoved: f.notRemoved.length,
    duplicated: f.duplicated.length,
    wrongContent: f.wrongContent.length,
    unknown: f.unknown.length,
    wrongAnswers: f.wrongAnswers.length,
    wrongMirrors: f.wrongMirrors.length,
    ambiguous: f.ambiguous.size,
  });
  const none = { wrongRemovals: 0, lost: 0, notRemoved: 0, duplicated: 0, wrongContent: 0, unknown: 0, wrongAnswers: 0, wrongMirrors: 0, ambiguous: 0 };

  it('finds nothing wrong in tables that are what was sent, and counts what the mirrors removed and kept', () => {
    const found = check(log(), ends);
    expect(counts(found), JSON.stringify({ ...found, ambiguous: [...found.ambiguous] })).toEqual(none);
    expect(found.removedByMirrors).toBe(1);
    expect(found.keptByWritesDuringUpload).toEqual([{ account: 'cat0', id: 'C', mirror: 'soak-cat0-3' }]);
    expect(found.removedAfterUnchangedResend).toBe(1);
    expect(found.mirrors.map((m) => [m.missing, m.state, m.rows])).toEqual([
      ['archive', 'done', 1],
      ['delete', 'held', 4],
    ]);
  });

  it.each<[string, () => CatalogueFindings, Partial<typeof none>, RegExp]>([
    ['a row written while the file arrived, archived by the mirror', () => check(log({ after: { ...ends, C: archived(301) } }), { ...ends, C: archived(301) }), { wrongRemovals: 1 }, /^cat0 C after .*active in the model \(left out by mirror soak-cat0-3\)$/],
    ['the same row archived after the last check', () => check(log(), { ...ends, C: archived(301) }), { wrongRemovals: 1 }, /^cat0 C at the end: archived in the table, active in the model/],
    ['a row on the file gone', () => check(log(), { ...ends, A: undefined! }), { lost: 1 }, /^cat0 A at the end: gone in the table, active in the model/],
    ['a row sent again unchanged, kept', () => check(log({ after: { ...ends, D: active(400) } }), { ...ends, D: active(400) }, facts({ state: 'done', rows: 0 })), { notRemoved: 1, wrongMirrors: 1 }, /^cat0 D after .*active in the table, archived in the model/],
    ['a row written twice', () => check(log(), { ...ends, B: { ...active(200), copies: 2 } }), { duplicated: 1 }, /^cat0 B at the end: 2 rows/],
  ])('reports %s', (_what, run, expected, first) => {
    const found = run();
    expect(counts(found)).toEqual({ ...none, ...expected });
    const lines = [...found.wrongRemovals, ...found.lost, ...found.notRemoved, ...found.duplicated];
    expect(lines[0]).toMatch(first);
  });

  it('counts a row written as the upload began as ambiguous, and does not judge it', () => {
    // the merge of C was sent 2 ms before the upload began and answered after: C may go either way
    const found = check(log({ raceMergeSentAt: 2_003, after: { ...ends, C: archived(301) } }), { ...ends, C: archived(301) }, facts({ state: 'done', rows: 2 }));
    expect(counts(found)).toEqual({ ...none, ambiguous: 1 });
    expect([...found.ambiguous.keys()]).toEqual(['cat0 C']);
  });
});
