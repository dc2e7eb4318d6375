import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
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
 * trickling their rows and one client sending hostile files (8 MiB each here). The 15-minute run
 * is `npm run soak` (bench/README.md).
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

  it('writes every row of every import answered 201 exactly once, and answers every import 201', async () => {
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
    expect(summary.rows.lost, story).toBe(0);
    expect(summary.rows.duplicated, story).toBe(0);
    expect(summary.rows.writtenWithout201, story).toBe(0);
    expect(summary.imports.unserved + summary.imports.refused, story).toBe(0);
    expect(summary.slow_uploads.unserved + summary.slow_uploads.refused, story).toBe(0);
    expect(summary.slow_uploads.rows.lost + summary.slow_uploads.rows.duplicated, story).toBe(0);
    expect(summary.failures, story).toEqual([]);
    // It did what it claims: imports served, workers killed, requests hung up at each moment.
    expect(summary.imports.answered_201).toBeGreaterThan(50);
    expect(summary.workers.kills).toBeGreaterThanOrEqual(4);
    expect(Object.values(summary.requests.hang_ups).every((n) => n > 0), JSON.stringify(summary.requests.hang_ups)).toBe(true);
    expect(summary.slow_uploads.answered_202).toBeGreaterThanOrEqual(4);
    expect(Object.values(summary.hostile_uploads.by_kind).every((r) => r.refused_as_expected > 0 && r.unexpected === 0), JSON.stringify(summary.hostile_uploads.by_kind)).toBe(true);
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
