import type postgres from 'postgres';
import { Pool } from 'undici';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { API_ERRORS } from '../../src/shared/errors/api-errors.js';
import { loadConfig } from '../../src/shared/infra/config.js';
import { createRedis } from '../../src/shared/infra/redis.js';
import { createImportQueue } from '../../src/shared/import/import-queue.js';
import { createAccount } from '../../src/shared/repositories/accounts.js';
import { createKeyWithinCap } from '../../src/shared/repositories/api-keys.js';
import type { ServiceProcess } from '../../test/support/processes.js';
import { percentile } from './stats.js';
import { CapWatch } from './soak-cap-watch.js';
import { checkCatalogue, type CatalogueAccount } from './soak-catalogue-check.js';
import { runCatalogueClient } from './soak-catalogue-client.js';
import { newFindings, type CatalogueFindings } from './soak-catalogue-findings.js';
import type { CatalogueOp } from './soak-catalogue-log.js';
import { catalogueFailures, catalogueReport, type CatalogueReport } from './soak-catalogue-report.js';
import { tamperCatalogue } from './soak-catalogue-tamper.js';
import type { CatalogueContext } from './soak-catalogue-write.js';
import { checkRows, claimsOf, type LedgerEntry, type RowCheck } from './soak-check.js';
import { newRequestStats, runClient, type Attempt, type ClientContext, type ImportRecord } from './soak-client.js';
import { HOSTILE_MIN_BYTES, hostileLine, hostileReport, keptByAccounts, runHostileSender, type HostileAttempt, type HostileKindReport } from './soak-hostile.js';
import { linesMentioning, SoakLog } from './soak-log.js';
import { MemoryWatch } from './soak-memory.js';
import { markersOf, markerPrefixOf } from './soak-rows.js';
import {
  checkSlowImports,
  newSlowUploadStats,
  runSlowSender,
  SLOW_IMPORT_PROBLEMS,
  slowImportReport,
  waitForFileImports,
  type SlowImportCheck,
  type SlowImportProblem,
  type SlowImportReport,
  type SlowUploadRecord,
} from './soak-slow-uploads.js';
import { pidsInTransaction } from './soak-transactions.js';
import { WorkerPool } from './soak-workers.js';

/** What the soak runs on: the processes' environment, a client of their database, and how to start each part. */
export interface SoakStack {
  /** DATABASE_URL, the Redis target, REDIS_PREFIX, SESSION_SECRET… of the API and the workers */
  env: Record<string, string>;
  sql: postgres.Sql;
  startApi(extraEnv?: Record<string, string>): Promise<ServiceProcess & { baseUrl: string }>;
  startWorker(extraEnv?: Record<string, string>): Promise<ServiceProcess>;
}

export interface SoakOptions {
  stack: SoakStack;
  durationMs: number;
  /** concurrent partner clients, spread over the accounts */
  clients: number;
  accounts: number;
  workers: number;
  /** a worker is SIGKILLed this often, and replaced */
  killEveryMs: number;
  /** every nth kill is aimed at a worker inside an import's transaction (waiting up to 10 s for one); 0: never */
  aimedKillEvery: number;
  /** share of requests sent over a socket that is closed before the answer */
  hangUpShare: number;
  /** a logical import not answered 201 within this is unserved */
  unservedAfterMs: number;
  /** an account refused every request for longer than this fails the soak */
  cappedLimitMs: number;
  /** mean pause between one client's logical imports */
  pauseMs: number;
  /** how long the queue may take to drain after the load (default 2 minutes) */
  drainWithinMs?: number;
  /**
   * honest NDJSON files of listings uploaded at once, each trickled a row every 100-500 ms, on
   * accounts of their own (as many per account as ACCOUNT_MAX_FILE_IMPORTS allows); 0 or absent: none
   */
  slowUploads?: number;
  /** a slow upload not answered 202 within this is unserved (default `unservedAfterMs` plus a minute, one Retry-After of the file-import cap) */
  slowUnservedAfterMs?: number;
  /** clients sending hostile files one at a time, from an account of their own; 0 or absent: none */
  hostileSenders?: number;
  /** about how many bytes each hostile file holds (default 24 MiB, at least 4 MiB) */
  hostileBytes?: number;
  /** mean pause between a hostile client's uploads (default 2 s) */
  hostilePauseMs?: number;
  /** the most the API's resident memory may grow while a hostile upload is in flight (default 128 MB) */
  hostileRssLimitMb?: number;
  /**
   * accounts whose catalogue a client of their own keeps by `external_id`: upserts, merges,
   * archives, deletes and mirrors (some held by their guard), with writes sent while each
   * mirror's file arrives; then every removal is checked against a replay of what was sent
   * (soak-catalogue-check.ts). 0 or absent: none
   */
  catalogueAccounts?: number;
  /** extra environment of the API and the workers (IMPORT_PICKUP_TIMEOUT_MS, WORKER_CONCURRENCY…) */
  serviceEnv?: Record<string, string>;
  /** the processes' output and the soak's notes */
  logFile: string;
  /** proves the checks can fail: tampers with the tables before checking them (see README) */
  tamper?: boolean;
  /** stops the soak early (SIGINT) */
  signal?: AbortSignal;
  progress?: (line: string) => void;
}

/** One import in the summary's details: what was sent, what came back, what the tables hold. */
export interface ImportDetail {
  key: string;
  kind: string;
  client: number;
  seq: number;
  account: number;
  end: string;
  rows: number;
  invalid: readonly number[];
  started_at_s: number;
  answered_at_s?: number;
  attempts: string[];
  lost?: { count: number; first: string[] };
  duplicated?: { count: number; first: { marker: string; copies: number; jobs: (string | null)[] }[] };
  written_without_201?: { count: number; first: string[] };
  invalid_written?: string[];
  body_mismatch?: string;
  /** `file`: a slow file upload (its 202 counts as the 201), `bulk`: a partner's bulk request */
  source: 'bulk' | 'file';
  /** the jobs that wrote its rows, and the job its Idempotency-Key points at now */
  jobs_that_wrote?: string[];
  claim_job?: string | null;
  log: string[];
}

export interface SoakSummary {
  verdict: 'pass' | 'fail' | 'interrupted';
  failures: string[];
  options: Record<string, unknown>;
  /** from the start of the load to the end of the checks */
  duration_s: number;
  /** accounts, API and workers started */
  setup_s: number;
  imports: {
    attempted: number;
    answered_201: number;
    unserved: number;
    refused: number;
    interrupted: number;
    listings: number;
    machines: number;
    with_invalid_rows: number;
    /** answered 201 after at least one of its requests was hung up */
    hung_up_then_201: number;
    /** answered by a replay of an earlier request's result */
    answered_by_replay: number;
    wrong_201_counts: number;
  };
  requests: {
    total: number;
    by_outcome: Record<string, number>;
    by_error: Record<string, number>;
    hang_ups: Record<string, number>;
    hang_ups_with_reset: number;
    hang_ups_answered_first: number;
  };
  rows: Omit<RowCheck, 'problems' | 'unknownMarkers'> & { unknown_markers: string[] };
  time_to_201_ms: { p50: number; p99: number; max: number; max_key: string | undefined };
  workers: {
    kills: number;
    /** kills that caught the worker inside an import's transaction */
    mid_import_kills: number;
    aimed_kills: number;
    unexpected_exits: string[];
    start_failures: string[];
    kill_log: string[];
  };
  accounts: {
    id: string;
    clients: number;
    longest_fully_capped_s: number;
    longest_fully_capped_from_s: number | undefined;
    /** per bucket: [429 Too many concurrent, any other answer] */
    capped_timeline: [number, number][];
    timeline_bucket_s: number;
    in_flight_slots_after_drain: number;
    probe_after_drain: string;
  }[];
  longest_fully_capped_s: number;
  queue: { drained: boolean; drain_ms: number; left: Record<string, number>; failed_jobs: number; failed_jobs_that_wrote: string[]; failed_first: string[] };
  slow_uploads: {
    senders: number;
    accounts: string[];
    attempted: number;
    answered_202: number;
    unserved: number;
    refused: number;
    interrupted: number;
    with_invalid_rows: number;
    hung_up_then_202: number;
    answered_by_replay: number;
    wrong_202_counts: number;
    requests: {
      total: number;
      by_outcome: Record<string, number>;
      by_error: Record<string, number>;
      hang_ups: Record<string, number>;
      hang_ups_answered_first: number;
      deferred_by_retry_after: number;
    };
    /** valid rows of the files answered 202, and what the tables hold of them */
    rows: { expected: number; found: number; lost: number; duplicated: number; written_without_202: number };
    time_to_202_ms: { p50: number; p99: number; max: number };
    /** from the 202 to the sender reading it completed */
    written_after_202_ms: { p50: number; max: number };
    imports_settled_ms: number | undefined;
    imports: SlowImportReport;
  };
  hostile_uploads: {
    senders: number;
    account: string | undefined;
    by_kind: Record<string, HostileKindReport>;
    unexpected_first: string[];
    /** what the hostile account holds after the load: imports by state, and rows */
    kept: { imports: Record<string, number>; rows: number };
  };
  /** the catalogue accounts: writes by external_id, mirrors, and what the check of their removals found */
  catalogue: CatalogueReport & { imports_settled_ms: number | undefined };
  /** the API's resident memory over the load; the timeline has the peak of each bucket */
  api_memory_mb: { at_load_start: number | undefined; max: number | undefined; at_load_end: number | undefined; timeline: number[]; timeline_bucket_s: number };
  details: { problems: ImportDetail[]; unserved: ImportDetail[]; wrong_201_counts: ImportDetail[]; left_out: number };
  log_file: string;
}

const DETAILS_PER_KIND = 20;
const LOG_LINES_PER_IMPORT = 40;

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/**
 * The soak: real API and worker processes, partner clients sending logical imports with
 * Idempotency-Keys and retrying them until they get a 201, a worker SIGKILLed every
 * `killEveryMs`, a share of requests hung up; then the queue is drained and the tables are
 * checked against what the partners were told.
 */
export async function runSoak(options: SoakOptions): Promise<SoakSummary> {
  const { stack } = options;
  const log = new SoakLog(options.logFile);
  let t0 = performance.now();
  /** ms since the load started (since the soak started, before that) */
  const now = () => performance.now() - t0;
  const interrupt = options.signal ?? new AbortController().signal;
  const progress = options.progress ?? (() => undefined);
  const failures: string[] = [];
  if (options.clients < options.accounts) throw new Error('at least one client per account');

  // note: one Global account per `accounts` (the highest quota: 1,000 requests a minute, which
  // the soak's pace stays under), one key per client.
  const accounts: string[] = [];
  for (let a = 0; a < options.accounts; a += 1) {
    const account = await createAccount(stack.sql, { displayName: `Soak partner ${a}`, tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
    accounts.push(account.id);
  }
  const accountOf = (client: number) => client % options.accounts;
  const keys: string[] = [];
  for (let c = 0; c < options.clients; c += 1) keys.push(await soakKey(stack.sql, accounts[accountOf(c)]!, `soak client ${c}`));

  // note: the slow senders go as many to an account as its file-import cap lets upload at once, so
  // a 429 `Too many file imports in progress` is a race (an import still being written), not the rule.
  const slowUploads = options.slowUploads ?? 0;
  const fileCap = loadConfig({ ...stack.env, ...(options.serviceEnv ?? {}) }).accountMaxFileImports;
  const slowAccounts: string[] = [];
  for (let a = 0; a < Math.ceil(slowUploads / fileCap); a += 1) {
    const account = await createAccount(stack.sql, { displayName: `Soak slow uploads ${a}`, tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
    slowAccounts.push(account.id);
  }
  const slowAccountOf = (sender: number) => Math.floor(sender / fileCap);
  const slowKeys: string[] = [];
  for (let s = 0; s < slowUploads; s += 1) slowKeys.push(await soakKey(stack.sql, slowAccounts[slowAccountOf(s)]!, `soak slow sender ${s}`));
  const hostileSenders = options.hostileSenders ?? 0;
  const hostileBytes = Math.max(HOSTILE_MIN_BYTES, options.hostileBytes ?? 24 * 1024 * 1024);
  const hostileAccount =
    hostileSenders === 0 ? undefined : (await createAccount(stack.sql, { displayName: 'Soak hostile uploads', tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null })).id;
  const hostileKeys: string[] = [];
  for (let h = 0; h < hostileSenders; h += 1) hostileKeys.push(await soakKey(stack.sql, hostileAccount!, `soak hostile sender ${h}`));
  // note: one client to a catalogue account, so that the order of its operations is known.
  const catalogueAccounts: string[] = [];
  const catalogueKeys: string[] = [];
  for (let a = 0; a < (options.catalogueAccounts ?? 0); a += 1) {
    const account = await createAccount(stack.sql, { displayName: `Soak catalogue ${a}`, tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
    catalogueAccounts.push(account.id);
    catalogueKeys.push(await soakKey(stack.sql, account.id, `soak catalogue client ${a}`));
  }
  const catalogueLogs: CatalogueOp[][] = catalogueAccounts.map(() => []);
  const catalogueStats = newRequestStats();
  const catalogueUploadStats = newSlowUploadStats();
  const catalogueSettled = { settled: true, ms: 0 };
  let catalogueFindings: CatalogueFindings | undefined;

  const config = loadConfig({ ...stack.env });
  const redis = createRedis(config, 'blocking');
  const queue = createImportQueue(config, redis);
  let api: (ServiceProcess & { baseUrl: string }) | undefined;
  let pool: Pool | undefined;
  let slowPool: Pool | undefined;
  let cataloguePool: Pool | undefined;
  let memory: MemoryWatch | undefined;
  const slowRecords: SlowUploadRecord[] = [];
  const slowStats = newSlowUploadStats();
  const hostileAttempts: HostileAttempt[] = [];
  let slowSettled: { settled: boolean; ms: number } = { settled: true, ms: 0 };
  let slowCheck: SlowImportCheck | undefined;
  let hostileKept: { imports: Record<string, number>; rows: number };
  const workers = new WorkerPool({ size: options.workers, start: () => stack.startWorker(options.serviceEnv ?? {}), inTransaction: (pids) => pidsInTransaction(stack.sql, pids), log, now });
  const records: ImportRecord[] = [];
  const stats = newRequestStats();
  const bucketMs = Math.max(10_000, Math.ceil(options.durationMs / 30 / 10_000) * 10_000);
  const capWatch = new CapWatch(options.accounts, bucketMs);
  const stop = new AbortController();
  const inFlight = { requests: 0 };
  let rowCheck: RowCheck;
  let drain: SoakSummary['queue'];
  const accountEnds: { slots: number; probe: string }[] = [];
  let ticker: NodeJS.Timeout | undefined;
  let stoppingApi = false;
  let setupMs: number;

  try {
    api = await stack.startApi(options.serviceEnv ?? {});
    log.attach(api, 'api');
    void api.exited.then((code) => {
      if (stoppingApi) return;
      failures.push(`the API exited during the soak (code ${code})`);
      log.note(`api exited (code ${code}, signal ${api?.child.signalCode})`);
    });
    if (!(await workers.fill())) throw new Error(`workers did not start: ${workers.startFailures.join('; ')}`);
    pool = new Pool(api.baseUrl, { connections: options.clients });
    slowPool = new Pool(api.baseUrl, { connections: Math.max(1, slowUploads) });
    cataloguePool = new Pool(api.baseUrl, { connections: Math.max(1, 2 * catalogueAccounts.length) });
    memory = new MemoryWatch(api.child.pid, bucketMs);
    setupMs = now();
    t0 = performance.now();
    log.loadClock = now;
    memory.start(now);
    log.note(
      `load starts: ${options.clients} clients on ${options.accounts} accounts, ${slowUploads} slow uploads on ${slowAccounts.length} accounts, ${hostileSenders} hostile senders, ` +
        `${options.workers} workers, a kill every ${options.killEveryMs} ms`,
    );

    const ctx: ClientContext = {
      pool,
      port: Number(new URL(api.baseUrl).port),
      keys,
      accountOf,
      hangUpShare: options.hangUpShare,
      unservedAfterMs: options.unservedAfterMs,
      pauseMs: options.pauseMs,
      now,
      stop: stop.signal,
      abort: interrupt,
      stats,
      capWatch,
      log,
      records,
      inFlight,
    };
    // note: a client or the killer that throws is a bug of the soak: it fails the run, and its
    // rejection must not wait, unhandled, for the end of the load.
    const failed = (what: string) => (error: unknown) => {
      failures.push(`${what} crashed: ${(error as Error).stack ?? String(error)}`);
      log.note(`${what} crashed: ${String(error)}`);
    };
    const clients = Array.from({ length: options.clients }, (_, c) => runClient(ctx, c).catch(failed(`client ${c}`)));
    const slowCtx = {
      port: ctx.port,
      pool: slowPool,
      keys: slowKeys,
      accountOf: slowAccountOf,
      hangUpShare: options.hangUpShare,
      unservedAfterMs: options.slowUnservedAfterMs ?? options.unservedAfterMs + 60_000,
      pauseMs: options.pauseMs,
      now,
      stop: stop.signal,
      abort: interrupt,
      log,
      records: slowRecords,
      stats: slowStats,
    };
    const slowSenders = Array.from({ length: slowUploads }, (_, s) => runSlowSender(slowCtx, s).catch(failed(`slow sender ${s}`)));
    const catalogueCtx: CatalogueContext = {
      client: { ...ctx, pool: cataloguePool, keys: catalogueKeys, accountOf: (a) => a, stats: catalogueStats, capWatch: new CapWatch(catalogueAccounts.length, bucketMs), records: [] },
      uploads: { ...slowCtx, pool: cataloguePool, keys: catalogueKeys, accountOf: (a) => a, records: [], stats: catalogueUploadStats },
      sql: stack.sql,
      accountIds: catalogueAccounts,
      logs: catalogueLogs,
    };
    const catalogueClients = catalogueAccounts.map((_, a) => runCatalogueClient(catalogueCtx, a).catch(failed(`catalogue client ${a}`)));
    const hostile = hostileKeys.map((key, h) =>
      runHostileSender(
        { port: ctx.port, key, bytes: hostileBytes, pauseMs: options.hostilePauseMs ?? 2_000, apiPid: api!.child.pid, now, stop: stop.signal, abort: interrupt, log, attempts: hostileAttempts },
        h,
      ).catch(failed(`hostile sender ${h}`)),
    );
    const killer = (async () => {
      const stopOrInterrupt = AbortSignal.any([stop.signal, interrupt]);
      // note: kills are `killEveryMs` apart from start to start, however long a replacement
      // takes to come up.
      for (let n = 1; ; n += 1) {
        await pause(n * options.killEveryMs - now(), stopOrInterrupt);
        if (stopOrInterrupt.aborted) return;
        // note: a worker killed at random is idle most of the time (an import takes tens of
        // milliseconds); an aimed kill makes sure some kills land inside a transaction.
        await workers.killOne(options.aimedKillEvery > 0 && n % options.aimedKillEvery === 0, () => inFlight.requests);
      }
    })().catch(failed('the worker killer'));
    ticker = setInterval(() => {
      const answered = records.filter((r) => r.end === 'answered').length;
      progress(
        `+${Math.round(now() / 1000)}s: ${records.length} imports, ${answered} answered 201, ${records.filter((r) => r.end === 'unserved' || r.end === 'refused').length} unserved; ` +
          `${inFlight.requests} requests in flight; ${workers.kills.length} kills; 429 capped ${stats.byError[`429 ${API_ERRORS.tooManyConcurrent.text}`] ?? 0}; hang-ups ${Object.values(stats.hangUps).reduce((a, b) => a + b, 0)}` +
          (slowUploads > 0 ? `; slow uploads ${slowRecords.filter((r) => r.end === 'answered').length} of ${slowRecords.length} answered 202` : '') +
          (catalogueAccounts.length > 0 ? `; catalogue ${catalogueLogs.flat().length} operations, ${catalogueLogs.flat().filter((op) => op.type === 'mirror').length} mirrors` : '') +
          (hostileSenders > 0 ? `; hostile ${hostileAttempts.filter((a) => a.verdict === 'refused').length} of ${hostileAttempts.length} refused as expected, API ${memory?.lastMb ?? '?'} MB` : ''),
      );
    }, Math.min(30_000, Math.max(5_000, options.durationMs / 10)));
    ticker.unref();

    await pause(options.durationMs, interrupt);
    stop.abort();
    log.note('load stops: clients finish the import in hand');
    // note: each client's import in hand ends within unservedAfterMs plus one request's timeout.
    await Promise.all([...clients, ...slowSenders, ...catalogueClients, ...hostile, killer]);
    clearInterval(ticker);
    memory.stop();
    memory.sample();
    capWatch.finish(now());
    const loadEndedMs = now();
    log.note(`clients done at +${seconds(loadEndedMs)}s`);

    // Workers back to full strength, so what is queued can drain.
    await workers.fill();
    drain = await drainQueue(queue, interrupt);
    log.note(`queue ${drain.drained ? 'drained' : 'NOT drained'} in ${drain.drain_ms} ms: ${JSON.stringify(drain.left)}`);
    // note: the file imports go through a queue of their own; their records say when they have ended.
    slowSettled = await waitForFileImports(stack.sql, slowAccounts, options.drainWithinMs ?? 120_000, interrupt);
    log.note(`slow uploads' imports ${slowSettled.settled ? 'ended' : 'NOT all ended'} in ${slowSettled.ms} ms`);
    Object.assign(catalogueSettled, await waitForFileImports(stack.sql, catalogueAccounts, options.drainWithinMs ?? 120_000, interrupt));
    log.note(`catalogue mirrors ${catalogueSettled.settled ? 'ended' : 'NOT all ended'} in ${catalogueSettled.ms} ms`);

    for (const accountId of accounts) {
      accountEnds.push({ slots: await slotsHeld(redis, `${config.redisPrefix}:in-flight:${accountId}`), probe: '' });
    }
    for (let a = 0; a < accounts.length; a += 1) {
      const client = keys.findIndex((_, c) => accountOf(c) === a);
      accountEnds[a]!.probe = await probe(pool, keys[client]!);
      log.note(`account ${a} after the drain: ${accountEnds[a]!.slots} in-flight slots held; probe ${accountEnds[a]!.probe}`);
    }

    const catalogue: CatalogueAccount[] = catalogueAccounts.map((id, a) => ({ id, label: `cat${a}`, log: catalogueLogs[a]! }));
    if (options.tamper) {
      await tamper(stack.sql, records, slowRecords, log);
      if (catalogue.length > 0) await tamperCatalogue(stack.sql, catalogue, log);
    }
    rowCheck = await checkRows(stack.sql, ledgerOf([...records, ...slowRecords]), catalogueAccounts);
    catalogueFindings = await checkCatalogue(stack.sql, catalogue);
    slowCheck = await checkSlowImports(stack.sql, slowAccounts, slowRecords);
    hostileKept = await keptByAccounts(stack.sql, hostileAccount === undefined ? [] : [hostileAccount]);
  } finally {
    clearInterval(ticker);
    stop.abort();
    await workers.stopAll(10_000);
    stoppingApi = true;
    await api?.stop('SIGTERM', 10_000);
    memory?.stop();
    await pool?.close();
    await slowPool?.close();
    await cataloguePool?.close();
    await queue.close();
    redis.disconnect();
    await log.close();
  }

  const answered = records.filter((r) => r.end === 'answered');
  const unserved = records.filter((r) => r.end === 'unserved' || r.end === 'refused');
  const mismatched = records.filter((r) => r.bodyMismatch !== undefined);
  const waits = answered.map((r) => r.answeredAtMs! - r.startedAtMs).sort((a, b) => a - b);
  const slowest = answered.reduce<ImportRecord | undefined>((a, r) => (a === undefined || r.answeredAtMs! - r.startedAtMs > a.answeredAtMs! - a.startedAtMs ? r : a), undefined);
  const accountsReport = accounts.map((id, a) => {
    const capped = capWatch.report(a);
    return {
      id,
      clients: keys.filter((_, c) => accountOf(c) === a).length,
      longest_fully_capped_s: seconds(capped.longestMs),
      longest_fully_capped_from_s: capped.longestFromMs === undefined ? undefined : seconds(capped.longestFromMs),
      capped_timeline: capped.timeline,
      timeline_bucket_s: bucketMs / 1000,
      in_flight_slots_after_drain: accountEnds[a]?.slots ?? -1,
      probe_after_drain: accountEnds[a]?.probe ?? '',
    };
  });
  const requestsTotal = Object.values(stats.byOutcome).reduce((a, b) => a + b, 0);
  const hangUps = Object.values(stats.hangUps).reduce((a, b) => a + b, 0);
  const kills = workers.kills.length;

  // The verdict. note: the last three guard against a soak that passes because it did nothing.
  if (rowCheck.lost > 0) failures.push(`${rowCheck.lost} rows of imports answered 201 are missing`);
  if (rowCheck.duplicated > 0) failures.push(`${rowCheck.duplicatedRows} rows written more than once (${rowCheck.duplicated} extra copies)`);
  if (rowCheck.writtenWithout201 > 0) failures.push(`${rowCheck.writtenWithout201} rows written for imports never answered 201`);
  if (rowCheck.invalidWritten > 0) failures.push(`${rowCheck.invalidWritten} rows written that failed validation`);
  if (rowCheck.unknown > 0) failures.push(`${rowCheck.unknown} rows in the tables that no import sent`);
  if (unserved.length > 0) failures.push(`${unserved.length} imports never answered 201 (${unserved.filter((r) => r.end === 'refused').length} of them refused with a 4xx)`);
  if (mismatched.length > 0) failures.push(`${mismatched.length} imports answered 201 with counts that do not match their rows`);
  for (const account of accountsReport) {
    if (account.longest_fully_capped_s * 1000 > options.cappedLimitMs) {
      failures.push(`account ${account.id} refused every request with 429 Too many concurrent requests for ${account.longest_fully_capped_s} s (from +${account.longest_fully_capped_from_s} s)`);
    }
    if (account.in_flight_slots_after_drain > 0) failures.push(`account ${account.id} still holds ${account.in_flight_slots_after_drain} in-flight slots after the load ended and the queue drained`);
    if (!account.probe_after_drain.startsWith('400')) failures.push(`account ${account.id}: a request after the drain got ${account.probe_after_drain} (expected 400 no valid rows)`);
  }
  if (!drain.drained) failures.push(`the queue did not drain: ${JSON.stringify(drain.left)}`);
  const slow = slowSummary();
  const slowUnserved = slowRecords.filter((r) => r.end === 'unserved' || r.end === 'refused');
  const slowMismatched = slowRecords.filter((r) => r.bodyMismatch !== undefined);
  if (slowUnserved.length > 0) failures.push(`${slowUnserved.length} slow file uploads never answered 202 (${slow.refused} of them refused with a 4xx)`);
  if (slowMismatched.length > 0) failures.push(`${slowMismatched.length} slow file uploads answered 202 with counts that do not match their file`);
  if (!slowSettled.settled) failures.push(`the slow uploads' imports had not all ended ${slowSettled.ms} ms after the load`);
  for (const [problem, what] of Object.entries(SLOW_IMPORT_PROBLEMS) as [SlowImportProblem, string][]) {
    const found = slow.imports[problem];
    if (found.count > 0) failures.push(`slow uploads: ${found.count} ${what}; first: ${found.first.slice(0, 3).join('; ')}`);
  }
  const hostileByKind = hostileReport(hostileAttempts, hostileBytes);
  const hostileUnexpected = hostileAttempts.filter((a) => a.verdict === 'unexpected');
  for (const [kind, report] of Object.entries(hostileByKind)) {
    if (report.unexpected > 0) failures.push(`hostile ${kind}: ${report.unexpected} of ${report.sent} answered unexpectedly; first: ${hostileLine(hostileUnexpected.find((a) => a.kind === kind)!)}`);
  }
  const rssLimit = options.hostileRssLimitMb ?? 128;
  const swollen = hostileAttempts.filter((a) => a.rssBeforeMb !== undefined && a.rssPeakMb !== undefined && a.rssPeakMb - a.rssBeforeMb > rssLimit);
  if (swollen.length > 0) failures.push(`the API's memory grew by more than ${rssLimit} MB during ${swollen.length} hostile uploads; first: ${swollen[0]!.requestId} ${swollen[0]!.kind} ${swollen[0]!.rssBeforeMb} -> ${swollen[0]!.rssPeakMb} MB`);
  if (hostileKept.rows > 0 || Object.keys(hostileKept.imports).length > 0) failures.push(`the hostile account holds ${hostileKept.rows} rows and imports ${JSON.stringify(hostileKept.imports)} after the load`);
  const catalogue = {
    ...catalogueReport({ accounts: catalogueAccounts, logs: catalogueLogs, findings: catalogueFindings ?? newFindings(), requests: catalogueStats, uploads: catalogueUploadStats, first: DETAILS_PER_KIND }),
    imports_settled_ms: catalogueSettled.settled ? catalogueSettled.ms : undefined,
  };
  if (catalogueAccounts.length > 0 && catalogueFindings === undefined && !interrupt.aborted) failures.push('catalogue: the check did not run');
  if (!catalogueSettled.settled) failures.push(`the catalogue's mirrors had not all ended ${catalogueSettled.ms} ms after the load`);
  failures.push(...catalogueFailures(catalogue, interrupt.aborted));
  if (drain.failed_jobs_that_wrote.length > 0) failures.push(`${drain.failed_jobs_that_wrote.length} jobs failed after writing their rows (answered "nothing was written")`);
  failures.push(...workers.unexpectedExits.map((line) => `unexpected: ${line}`));
  if (!interrupt.aborted) {
    if (answered.length === 0) failures.push('no import was answered 201: the soak checked nothing');
    if (options.killEveryMs < options.durationMs && kills === 0) failures.push('no worker was killed');
    if (options.hangUpShare > 0 && hangUps === 0) failures.push('no request was hung up');
    if (slowUploads > 0 && slow.answered_202 === 0) failures.push('no slow file upload was answered 202');
    for (const [kind, report] of Object.entries(hostileByKind)) {
      if (hostileSenders > 0 && report.refused_as_expected === 0) failures.push(`hostile ${kind}: none was refused as expected (${report.sent} sent)`);
    }
  }

  const details = await importDetails(options.logFile, stack, [...records, ...slowRecords], rowCheck, [...unserved, ...slowUnserved], [...mismatched, ...slowMismatched], new Set(slowRecords.map((r) => r.key)));
  return {
    verdict: interrupt.aborted ? 'interrupted' : failures.length > 0 ? 'fail' : 'pass',
    failures,
    options: {
      duration_s: options.durationMs / 1000,
      clients: options.clients,
      accounts: options.accounts,
      workers: options.workers,
      kill_every_s: options.killEveryMs / 1000,
      aimed_kill_every: options.aimedKillEvery,
      hang_up_share: options.hangUpShare,
      unserved_after_s: options.unservedAfterMs / 1000,
      capped_limit_s: options.cappedLimitMs / 1000,
      pause_ms: options.pauseMs,
      service_env: options.serviceEnv ?? {},
      tamper: options.tamper ?? false,
      slow_uploads: slowUploads,
      slow_unserved_after_s: (options.slowUnservedAfterMs ?? options.unservedAfterMs + 60_000) / 1000,
      hostile_senders: hostileSenders,
      hostile_bytes: hostileBytes,
      hostile_pause_ms: options.hostilePauseMs ?? 2_000,
      hostile_rss_limit_mb: rssLimit,
      catalogue_accounts: catalogueAccounts.length,
    },
    duration_s: seconds(now()),
    setup_s: seconds(setupMs),
    imports: {
      attempted: records.length,
      answered_201: answered.length,
      unserved: records.filter((r) => r.end === 'unserved').length,
      refused: records.filter((r) => r.end === 'refused').length,
      interrupted: records.filter((r) => r.end === 'interrupted' || r.end === undefined).length,
      listings: records.filter((r) => r.kind === 'listings').length,
      machines: records.filter((r) => r.kind === 'machines').length,
      with_invalid_rows: records.filter((r) => r.invalid.length > 0).length,
      hung_up_then_201: answered.filter((r) => r.attempts.some((a) => a.outcome === 'hung-up')).length,
      answered_by_replay: answered.filter((r) => r.attempts.at(-1)?.replayed === true).length,
      wrong_201_counts: mismatched.length,
    },
    requests: { total: requestsTotal, by_outcome: stats.byOutcome, by_error: stats.byError, hang_ups: stats.hangUps, hang_ups_with_reset: stats.hangUpResets, hang_ups_answered_first: stats.hangUpsAnsweredFirst },
    rows: {
      expected: rowCheck.expected,
      found: rowCheck.found,
      lost: rowCheck.lost,
      duplicated: rowCheck.duplicated,
      duplicatedRows: rowCheck.duplicatedRows,
      writtenWithout201: rowCheck.writtenWithout201,
      invalidWritten: rowCheck.invalidWritten,
      unknown: rowCheck.unknown,
      unknown_markers: rowCheck.unknownMarkers,
    },
    time_to_201_ms: {
      p50: Math.round(percentile(waits, 50) || 0),
      p99: Math.round(percentile(waits, 99) || 0),
      max: Math.round(waits.at(-1) ?? 0),
      max_key: slowest?.key,
    },
    workers: {
      kills,
      mid_import_kills: workers.kills.filter((k) => k.midImport).length,
      aimed_kills: workers.kills.filter((k) => k.aimed).length,
      unexpected_exits: workers.unexpectedExits,
      start_failures: workers.startFailures,
      kill_log: workers.kills.map((k) => `+${seconds(k.atMs)}s ${k.label} pid=${k.pid}${k.midImport ? ' mid-import' : k.aimed ? ' aimed, missed' : ''} (${k.requestsInFlight} requests in flight)`),
    },
    accounts: accountsReport,
    longest_fully_capped_s: Math.max(0, ...accountsReport.map((a) => a.longest_fully_capped_s)),
    queue: drain,
    slow_uploads: slow,
    hostile_uploads: {
      senders: hostileSenders,
      account: hostileAccount,
      by_kind: hostileByKind,
      unexpected_first: hostileUnexpected.slice(0, DETAILS_PER_KIND).map(hostileLine),
      kept: hostileKept,
    },
    catalogue,
    api_memory_mb: { at_load_start: memory?.atStartMb, max: memory?.maxMb, at_load_end: memory?.lastMb, timeline: memory?.timeline ?? [], timeline_bucket_s: bucketMs / 1000 },
    details,
    log_file: options.logFile,
  };

  function slowSummary(): SoakSummary['slow_uploads'] {
    const answered202 = slowRecords.filter((r) => r.end === 'answered');
    const keys = new Set(slowRecords.map((r) => r.key));
    const problems = rowCheck.problems.filter((p) => keys.has(p.key));
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const waits = sorted(answered202.map((r) => r.answeredAtMs! - r.startedAtMs));
    const written = sorted(answered202.filter((r) => r.writtenAtMs !== undefined).map((r) => r.writtenAtMs! - r.answeredAtMs!));
    const check = slowCheck ?? { accepted: 0, completed: 0, rows_found: 0, not_completed: [], extra_imports: [], uploads_left: [], wrong_claims: [], wrong_counts: [], rows_by_another_import: [] };
    return {
      senders: slowUploads,
      accounts: slowAccounts,
      attempted: slowRecords.length,
      answered_202: answered202.length,
      unserved: slowRecords.filter((r) => r.end === 'unserved').length,
      refused: slowRecords.filter((r) => r.end === 'refused').length,
      interrupted: slowRecords.filter((r) => r.end === 'interrupted' || r.end === undefined).length,
      with_invalid_rows: slowRecords.filter((r) => r.invalid.length > 0).length,
      hung_up_then_202: answered202.filter((r) => r.attempts.some((a) => a.outcome === 'hung-up')).length,
      answered_by_replay: answered202.filter((r) => r.attempts.at(-1)?.replayed === true).length,
      wrong_202_counts: slowRecords.filter((r) => r.bodyMismatch !== undefined).length,
      requests: {
        total: Object.values(slowStats.byOutcome).reduce((a, b) => a + b, 0),
        by_outcome: slowStats.byOutcome,
        by_error: slowStats.byError,
        hang_ups: slowStats.hangUps,
        hang_ups_answered_first: slowStats.hangUpsAnsweredFirst,
        deferred_by_retry_after: slowStats.deferred,
      },
      rows: {
        expected: answered202.reduce((sum, r) => sum + r.rows - r.invalid.length, 0),
        found: check.rows_found,
        lost: problems.reduce((sum, p) => sum + p.lost.length, 0),
        duplicated: problems.reduce((sum, p) => sum + p.duplicated.reduce((n, d) => n + d.copies - 1, 0), 0),
        written_without_202: problems.reduce((sum, p) => sum + p.writtenWithout201.length, 0),
      },
      time_to_202_ms: { p50: Math.round(percentile(waits, 50) || 0), p99: Math.round(percentile(waits, 99) || 0), max: Math.round(waits.at(-1) ?? 0) },
      written_after_202_ms: { p50: Math.round(percentile(written, 50) || 0), max: Math.round(written.at(-1) ?? 0) },
      imports_settled_ms: slowSettled.settled ? slowSettled.ms : undefined,
      imports: slowImportReport(check, DETAILS_PER_KIND),
    };
  }

  async function drainQueue(q: typeof queue, signal: AbortSignal): Promise<SoakSummary['queue']> {
    const started = now();
    let quiet = 0;
    let left: Record<string, number> = {};
    // note: a killed worker's job counts as active until a stalled check puts it back, so the
    // queue must read empty several times in a row.
    while (now() - started < (options.drainWithinMs ?? 120_000) && !signal.aborted) {
      left = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
      quiet = Object.values(left).every((n) => n === 0) ? quiet + 1 : 0;
      if (quiet >= 6) break;
      await pause(500);
    }
    const failed = await q.getFailed(0, 999);
    const failedIds = failed.map((job) => job.id).filter((id): id is string => id !== undefined);
    // note: judged by the rows, not by the `imports` record, which may also record an import
    // that failed.
    const wrote =
      failedIds.length === 0
        ? []
        : await stack.sql<{ job_id: string }[]>`
            select import_job_id as job_id from listings where import_job_id in ${stack.sql(failedIds)}
            union
            select import_job_id as job_id from machines where import_job_id in ${stack.sql(failedIds)}`;
    return {
      drained: quiet >= 6,
      drain_ms: Math.round(now() - started),
      left,
      failed_jobs: failed.length,
      failed_jobs_that_wrote: wrote.map((row) => row.job_id),
      failed_first: failed.slice(0, 10).map((job) => `${job.id} (request ${(job.data as { requestId?: string } | undefined)?.requestId}): ${job.failedReason} after ${job.attemptsMade} attempts, stalled ${job.stalledCounter}`),
    };
  }
}

/** A fresh key (`listings:write`) of the account. */
async function soakKey(sql: postgres.Sql, accountId: string, label: string): Promise<string> {
  const key = generateApiKey();
  const created = await createKeyWithinCap(sql, { accountId, label, scopes: ['listings:write'], keyPrefix: key.prefix, keyHash: key.hash });
  if (created === 'cap-reached') throw new Error('too many clients per account: an account holds at most 20 active keys');
  return key.fullKey;
}

/** What the checks need of each record. */
function ledgerOf(records: readonly ImportRecord[]): LedgerEntry[] {
  return records.map((r) => ({ key: r.key, kind: r.kind, markerPrefix: r.markerPrefix, rows: r.rows, invalid: r.invalid, answered: r.end === 'answered' }));
}

/** In-flight slots of an account whose lease has not ended, on Redis's clock. */
async function slotsHeld(redis: ReturnType<typeof createRedis>, key: string): Promise<number> {
  // note: a request that just ended gives its slot back without waiting; a few seconds settle it.
  let held = 0;
  for (let i = 0; i < 10; i += 1) {
    const [sec, usec] = await redis.time();
    held = await redis.zcount(key, `(${Number(sec) * 1000 + Math.floor(Number(usec) / 1000)}`, '+inf');
    if (held === 0) return 0;
    await pause(500);
  }
  return held;
}

/**
 * One request of the account after the load: a body whose only row is invalid, which takes an
 * in-flight slot (the cap is decided before the body is read) and then writes nothing. 400 says
 * the account can still import; 429 says it is capped with nothing in flight.
 */
async function probe(pool: Pool, key: string): Promise<string> {
  try {
    const reply = await pool.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ listings: [{ title: '' }] }),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const body = (await reply.body.json().catch(() => ({}))) as { error?: string };
    return `${reply.statusCode} ${body.error ?? ''}`.trim();
  } catch (error) {
    return `error ${(error as Error).message}`;
  }
}

/**
 * `--tamper`: one extra copy of a row of an answered import, one row of another deleted, and a
 * row of an import the partners never sent (recorded as never answered) written by hand. The
 * run must then report exactly one duplicate, one lost row and one row written without a 201.
 * With slow uploads, also one row of a file answered 202 deleted (one more lost row) and one of
 * their imports counted as having written a row a second time (`unchanged` + 1, what a chunk
 * written twice over rows with an `external_id` leaves): one file import with wrong counts.
 */
async function tamper(sql: postgres.Sql, records: ImportRecord[], slowRecords: SlowUploadRecord[], log: SoakLog): Promise<void> {
  const candidates = records.filter((r) => r.end === 'answered' && r.kind === 'listings' && r.rows - r.invalid.length >= 1);
  const [copied, deleted] = candidates;
  if (copied === undefined || deleted === undefined) throw new Error('--tamper needs two listings imports answered 201');
  const copiedMarker = markersOf(copied.markerPrefix, copied.rows, copied.invalid).valid[0]!;
  const deletedMarker = markersOf(deleted.markerPrefix, deleted.rows, deleted.invalid).valid[0]!;
  const copyOf = (marker: string, title: string) => sql`
    insert into listings (account_id, import_job_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, tags, maker_name)
    select account_id, import_job_id, ${title}, description, price_cents, currency, category, material, photo_urls, thumbnail_url, tags, maker_name
    from listings where title = ${marker} limit 1`;
  await copyOf(copiedMarker, copiedMarker);
  await sql`delete from listings where title = ${deletedMarker}`;
  const ghost: ImportRecord = { ...copied, key: 'tamper-never-sent', client: -1, seq: 1, markerPrefix: markerPrefixOf('tamper', 1), rows: 1, invalid: [], attempts: [], end: 'unserved' };
  delete ghost.answeredAtMs;
  records.push(ghost);
  await copyOf(copiedMarker, `${ghost.markerPrefix}-0`);
  log.note(`tampered: copied ${copiedMarker}, deleted ${deletedMarker}, wrote ${ghost.markerPrefix}-0 for an import never answered`);
  const files = slowRecords.filter((r) => r.end === 'answered' && r.importId !== undefined && r.rows - r.invalid.length >= 1);
  if (files.length === 0) return;
  if (files.length < 2) throw new Error('--tamper needs two slow file uploads answered 202');
  const [shortened, rewritten] = files as [SlowUploadRecord, SlowUploadRecord];
  const shortenedMarker = markersOf(shortened.markerPrefix, shortened.rows, shortened.invalid).valid[0]!;
  await sql`delete from listings where title = ${shortenedMarker}`;
  await sql`update imports set unchanged = coalesce(unchanged, 0) + 1 where job_id = ${rewritten.importId!}`;
  log.note(`tampered: deleted ${shortenedMarker} of a file answered 202, counted a row of import ${rewritten.importId} as written twice`);
}

/** Its requests, the first 15 and the last 10 when there are more. */
function attemptLines(record: ImportRecord): string[] {
  const line = (a: Attempt) =>
    `${a.requestId} +${seconds(a.atMs)}s${a.hangUp ? ` hang-up ${a.hangUp}${a.reset ? '/rst' : '/fin'}` : ''} -> ${a.outcome}${a.replayed ? ' (replayed)' : ''}${a.detail ? ` ${a.detail}` : ''} in ${a.ms} ms`;
  const { attempts } = record;
  if (attempts.length <= 25) return attempts.map(line);
  return [...attempts.slice(0, 15).map(line), `… ${attempts.length - 25} more …`, ...attempts.slice(-10).map(line)];
}

/** The first imports of each kind of failure, each with its requests, the jobs that wrote its rows and its log lines. */
async function importDetails(
  logFile: string,
  stack: SoakStack,
  records: ImportRecord[],
  rowCheck: RowCheck,
  unserved: ImportRecord[],
  mismatched: ImportRecord[],
  fileKeys: ReadonlySet<string>,
): Promise<SoakSummary['details']> {
  const byKey = new Map(records.map((r) => [r.key, r]));
  const problems = rowCheck.problems.slice(0, DETAILS_PER_KIND);
  const unservedShown = unserved.filter((r) => !problems.some((p) => p.key === r.key)).slice(0, DETAILS_PER_KIND);
  const mismatchedShown = mismatched.slice(0, DETAILS_PER_KIND);
  const shownKeys = [...new Set([...problems.map((p) => p.key), ...unservedShown.map((r) => r.key), ...mismatchedShown.map((r) => r.key)])];
  const claims = await claimsOf(stack.sql, shownKeys);
  const needles = new Map<string, string[]>();
  for (const key of shownKeys) {
    const record = byKey.get(key)!;
    const problem = rowCheck.problems.find((p) => p.key === key);
    const claim = claims.get(key);
    // note: request ids reach the API's and the workers' lines; job ids the workers' and the
    // API's job errors; the key the soak's own notes.
    needles.set(key, [`"${record.markerPrefix}-a`, key, ...(problem?.jobs ?? []), ...(claim ? [claim] : [])]);
  }
  const lines = await linesMentioning(logFile, needles, LOG_LINES_PER_IMPORT);
  const detail = (record: ImportRecord): ImportDetail => {
    const problem = rowCheck.problems.find((p) => p.key === record.key);
    return {
      key: record.key,
      kind: record.kind,
      source: fileKeys.has(record.key) ? 'file' : 'bulk',
      client: record.client,
      seq: record.seq,
      account: record.accountIndex,
      end: record.end ?? 'interrupted',
      rows: record.rows,
      invalid: record.invalid,
      started_at_s: seconds(record.startedAtMs),
      ...(record.answeredAtMs === undefined ? {} : { answered_at_s: seconds(record.answeredAtMs) }),
      attempts: attemptLines(record),
      ...(problem && problem.lost.length > 0 ? { lost: { count: problem.lost.length, first: problem.lost.slice(0, 5) } } : {}),
      ...(problem && problem.duplicated.length > 0 ? { duplicated: { count: problem.duplicated.length, first: problem.duplicated.slice(0, 5) } } : {}),
      ...(problem && problem.writtenWithout201.length > 0 ? { written_without_201: { count: problem.writtenWithout201.length, first: problem.writtenWithout201.slice(0, 5) } } : {}),
      ...(problem && problem.invalidWritten.length > 0 ? { invalid_written: problem.invalidWritten } : {}),
      ...(record.bodyMismatch === undefined ? {} : { body_mismatch: record.bodyMismatch }),
      ...(problem ? { jobs_that_wrote: problem.jobs } : {}),
      claim_job: claims.get(record.key) ?? null,
      log: lines.get(record.key) ?? [],
    };
  };
  return {
    problems: problems.map((p) => detail(byKey.get(p.key)!)),
    unserved: unservedShown.map(detail),
    wrong_201_counts: mismatchedShown.map(detail),
    left_out: Math.max(0, rowCheck.problems.length - problems.length) + Math.max(0, unserved.length - unservedShown.length - problems.length) + Math.max(0, mismatched.length - mismatchedShown.length),
  };
}
