import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { Pool } from 'undici';
import { claimsOf } from './soak-check.js';
import type { Attempt, ImportRecord } from './soak-client.js';
import type { HangUpMoment } from './soak-hang-up.js';
import type { SoakLog } from './soak-log.js';
import { markerPrefixOf, markersOf, rowMarker, soakListing } from './soak-rows.js';
import { jsonOf, retryAfterOf, sendUpload } from './soak-upload.js';

/**
 * The slow uploads of the soak: honest NDJSON files of listings sent to
 * `POST /v1/api/imports?kind=listings` a row every 100-500 ms, each with an Idempotency-Key and
 * sent again, the same bytes with the same key, until it is answered 202; then the workers write
 * them. Every row carries its marker as title and as `external_id`.
 *
 * note: with an `external_id` a second write of a row updates it in place instead of adding a
 * copy, so a duplicate is not seen by counting rows: it is seen in the import's counts (`updated`
 * or `unchanged` above 0), in a second import of the same file, or in a row whose
 * `import_job_id` is not the import its 202 named (checkSlowImports).
 */
export interface SlowUploadRecord extends ImportRecord {
  /** the import its 202 named */
  importId?: string;
  /** when its sender saw it completed, ms after the load began */
  writtenAtMs?: number;
  /** the state its sender last read */
  state?: string;
}

export interface SlowUploadStats {
  /** by status, and `hung-up`, `connection-error`, `timed-out` */
  byOutcome: Record<string, number>;
  /** answers other than 202 by status and error text */
  byError: Record<string, number>;
  hangUps: Partial<Record<HangUpMoment, number>>;
  /** 429 or 503 with Retry-After, waited out */
  deferred: number;
  /** attempts meant to hang up whose answer came first (then they count as answered) */
  hangUpsAnsweredFirst: number;
}

export interface SlowUploadContext {
  port: number;
  /** for reading each import until it is written */
  pool: Pool;
  /** the key of each sender */
  keys: string[];
  accountOf(sender: number): number;
  hangUpShare: number;
  /** an upload not answered 202 within this is unserved */
  unservedAfterMs: number;
  pauseMs: number;
  now(): number;
  stop: AbortSignal;
  abort: AbortSignal;
  log: SoakLog;
  records: SlowUploadRecord[];
  stats: SlowUploadStats;
}

/** Longer than the slowest file takes to trickle (30 rows, 500 ms apart) and be accepted on a busy machine. */
const SLOW_REQUEST_TIMEOUT_MS = 90_000;
const READ_EVERY_MS = 500;
const ENDED = new Set(['completed', 'failed', 'cancelled']);

export function newSlowUploadStats(): SlowUploadStats {
  return { byOutcome: {}, byError: {}, hangUps: {}, deferred: 0, hangUpsAnsweredFirst: 0 };
}

/** A fresh slow upload: 10-30 listings, one time in five one of them invalid (a negative price). */
export function newSlowUpload(sender: number, seq: number, accountIndex: number, random: () => number = Math.random): { record: SlowUploadRecord; lines: Buffer[] } {
  const rows = 10 + Math.floor(random() * 21);
  const invalid = random() < 0.2 ? [Math.floor(random() * rows)] : [];
  const markerPrefix = markerPrefixOf(`slow${sender}`, seq);
  const lines = Array.from({ length: rows }, (_, row) => {
    const marker = rowMarker(markerPrefix, row);
    return Buffer.from(`${JSON.stringify({ ...soakListing(marker, !invalid.includes(row), row), external_id: marker })}\n`);
  });
  const record: SlowUploadRecord = {
    client: sender,
    seq,
    accountIndex,
    kind: 'listings',
    key: `soak-slow${sender}-${seq}-${randomUUID()}`,
    rows,
    invalid,
    markerPrefix,
    startedAtMs: 0,
    attempts: [],
  };
  return { record, lines };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** What a 202 must say of the file: every row received, exactly the invalid ones skipped. */
function mismatchOf(record: SlowUploadRecord, json: Record<string, unknown> | undefined): string | undefined {
  const rows = (json?.import as { rows?: { received?: unknown; skipped?: unknown } } | undefined)?.rows;
  if (rows?.received === record.rows && rows.skipped === record.invalid.length) return undefined;
  return `expected received ${record.rows}, skipped ${record.invalid.length}; got ${JSON.stringify(json).slice(0, 300)}`;
}

/** A file to upload: where, its lines, and (for a file that holds a line back) how each attempt hands them over. */
export interface SlowFile {
  /** `/v1/api/imports?kind=listings...` */
  path: string;
  lines: Buffer[];
  /** the lines of one attempt, trickled; the lines themselves by default */
  pieces?: () => AsyncIterable<Buffer>;
  /** the wait before each line after the first (100-500 ms by default) */
  gapMs?: () => number;
}

/**
 * Sends one file until it is answered 202, trickling its rows every time; a share of its
 * attempts hang up mid-body or right after the last row. 429 and 503 with Retry-After are waited
 * out, 408, other 5xx and lost connections retried at once or soon; any other 4xx refuses it.
 */
export async function serveSlowUpload(ctx: SlowUploadContext, record: SlowUploadRecord, file: SlowFile): Promise<void> {
  const { lines } = file;
  record.startedAtMs = Math.round(ctx.now());
  const deadlineMs = record.startedAtMs + ctx.unservedAfterMs;
  for (let n = 1; ; n += 1) {
    if (ctx.abort.aborted) {
      record.end = 'interrupted';
      return;
    }
    if (ctx.now() >= deadlineMs) {
      record.end = 'unserved';
      ctx.log.note(`slow upload unserved: sender=${record.client} upload=${record.seq} key=${record.key} after ${n - 1} attempts`);
      return;
    }
    const hangUp: HangUpMoment | undefined = Math.random() < ctx.hangUpShare ? (Math.random() < 0.5 ? 'mid-body' : 'after-body') : undefined;
    const attempt: Attempt = {
      n,
      requestId: `${record.markerPrefix}-a${n}`,
      atMs: Math.round(ctx.now()),
      ms: 0,
      outcome: 'connection-error',
      ...(hangUp === undefined ? {} : { hangUp, reset: Math.random() < 0.5 }),
    };
    record.attempts.push(attempt);
    const outcome = await sendUpload({
      port: ctx.port,
      path: file.path,
      headers: {
        authorization: `Bearer ${ctx.keys[record.client]}`,
        'content-type': 'application/x-ndjson',
        'idempotency-key': record.key,
        'x-request-id': attempt.requestId,
      },
      pieces: file.pieces?.() ?? lines,
      gapMs: file.gapMs ?? (() => 100 + Math.random() * 400),
      ...(hangUp === 'mid-body' ? { hangUpAfter: 1 + Math.floor(Math.random() * (lines.length - 1)) } : hangUp === 'after-body' ? { hangUpAfter: 'all' as const } : {}),
      reset: attempt.reset === true,
      timeoutMs: Math.round(Math.max(1_000, Math.min(SLOW_REQUEST_TIMEOUT_MS, deadlineMs - ctx.now()))),
      signal: ctx.abort,
    });
    attempt.ms = Math.round(ctx.now() - attempt.atMs);
    if (hangUp !== undefined && outcome.kind === 'hung-up') ctx.stats.hangUps[hangUp] = (ctx.stats.hangUps[hangUp] ?? 0) + 1;
    if (hangUp !== undefined && outcome.kind === 'answered') ctx.stats.hangUpsAnsweredFirst += 1;
    let waitMs: number;
    if (outcome.kind !== 'answered') {
      attempt.outcome = outcome.kind;
      if (outcome.kind === 'connection-error') attempt.detail = outcome.error;
      ctx.stats.byOutcome[attempt.outcome] = (ctx.stats.byOutcome[attempt.outcome] ?? 0) + 1;
      waitMs = Math.random() * 200;
    } else {
      attempt.outcome = outcome.status;
      ctx.stats.byOutcome[outcome.status] = (ctx.stats.byOutcome[outcome.status] ?? 0) + 1;
      const json = jsonOf(outcome.body);
      if (outcome.status === 202) {
        record.end = 'answered';
        record.answeredAtMs = Math.round(ctx.now());
        const id = (json?.import as { id?: unknown } | undefined)?.id;
        if (typeof id === 'string') record.importId = id;
        if (outcome.headers['idempotent-replayed'] === 'true') attempt.replayed = true;
        const mismatch = mismatchOf(record, json);
        if (mismatch !== undefined) {
          record.bodyMismatch = mismatch;
          ctx.log.note(`slow upload 202 with wrong counts: key=${record.key} ${mismatch}`);
        }
        return;
      }
      attempt.detail = typeof json?.error === 'string' ? json.error : `(no error text) ${outcome.body.slice(0, 200)}`;
      const label = `${outcome.status} ${attempt.detail}`;
      ctx.stats.byError[label] = (ctx.stats.byError[label] ?? 0) + 1;
      const retryAfter = retryAfterOf(outcome.headers);
      if ((outcome.status === 429 || outcome.status === 503) && retryAfter !== undefined) {
        ctx.stats.deferred += 1;
        waitMs = retryAfter * 1_000 + Math.random() * 1_000;
      } else if (outcome.status === 408 || outcome.status >= 500) {
        waitMs = 250 * 2 ** Math.min(n - 1, 3) + Math.random() * 250;
      } else {
        record.end = 'refused';
        ctx.log.note(`slow upload refused: sender=${record.client} upload=${record.seq} key=${record.key} req=${attempt.requestId} -> ${label}`);
        return;
      }
    }
    ctx.log.note(
      `slow upload sender=${record.client} upload=${record.seq} key=${record.key} req=${attempt.requestId}${attempt.hangUp ? ` hang-up=${attempt.hangUp}${attempt.reset ? '/rst' : '/fin'}` : ''} -> ${attempt.outcome}${attempt.detail ? ` (${attempt.detail})` : ''} in ${attempt.ms} ms`,
    );
    await sleep(Math.min(waitMs, deadlineMs - ctx.now()), ctx.abort);
  }
}

/** Reads the import (`GET /v1/api/imports/{id}`) until it has ended, or the load stops. */
export async function waitWritten(ctx: SlowUploadContext, record: SlowUploadRecord): Promise<void> {
  const stopOrAbort = AbortSignal.any([ctx.stop, ctx.abort]);
  while (!stopOrAbort.aborted) {
    try {
      const reply = await ctx.pool.request({
        path: `/v1/api/imports/${record.importId}`,
        method: 'GET',
        headers: { authorization: `Bearer ${ctx.keys[record.client]}`, 'x-request-id': `${record.markerPrefix}-read` },
        signal: stopOrAbort,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      const state = (jsonOf(await reply.body.text()) as { state?: unknown } | undefined)?.state;
      if (reply.statusCode === 200 && typeof state === 'string') {
        record.state = state;
        if (ENDED.has(state)) {
          record.writtenAtMs = Math.round(ctx.now());
          return;
        }
      }
    } catch {
      // note: a read that failed (the load stopping, a lost connection) is tried again or given up with the load.
    }
    await sleep(READ_EVERY_MS, stopOrAbort);
  }
}

/**
 * One slow sender: files one after another, each once the one before is written (a partner
 * waiting for its import before sending the next, which keeps the account under its file-import
 * cap), with a pause between them, until the load stops; the file in hand is finished then.
 */
export async function runSlowSender(ctx: SlowUploadContext, sender: number): Promise<void> {
  const stopOrAbort = AbortSignal.any([ctx.stop, ctx.abort]);
  for (let seq = 1; !stopOrAbort.aborted; seq += 1) {
    const { record, lines } = newSlowUpload(sender, seq, ctx.accountOf(sender));
    ctx.records.push(record);
    await serveSlowUpload(ctx, record, { path: '/v1/api/imports?kind=listings', lines });
    if (record.end === 'answered' && record.importId !== undefined) await waitWritten(ctx, record);
    await sleep(ctx.pauseMs * (0.5 + Math.random()), stopOrAbort);
  }
}

/** Waits until no file import of the accounts is queued or running; whether that happened within `withinMs`. */
export async function waitForFileImports(sql: postgres.Sql, accountIds: string[], withinMs: number, signal: AbortSignal): Promise<{ settled: boolean; ms: number }> {
  const started = performance.now();
  if (accountIds.length === 0) return { settled: true, ms: 0 };
  while (performance.now() - started < withinMs && !signal.aborted) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from imports where account_id in ${sql(accountIds)} and state in ('queued', 'running')`;
    if (row!.n === 0) return { settled: true, ms: Math.round(performance.now() - started) };
    await sleep(500, signal);
  }
  return { settled: false, ms: Math.round(performance.now() - started) };
}

/** What checkSlowImports finds wrong, each with what it means in the verdict. */
export const SLOW_IMPORT_PROBLEMS = {
  not_completed: 'imports answered 202 not completed',
  extra_imports: 'imports of the slow accounts that no 202 named (a file kept twice, or without a 202)',
  uploads_left: 'uploads still uploading after the load',
  wrong_claims: 'Idempotency-Keys naming another import than their 202',
  wrong_counts: "file imports whose counts are not their file's (a row updated or unchanged was written twice)",
  rows_by_another_import: "rows written by another import than their file's",
} as const;
export type SlowImportProblem = keyof typeof SLOW_IMPORT_PROBLEMS;

export type SlowImportCheck = {
  /** imports a 202 named */
  accepted: number;
  completed: number;
  /** rows in the listings table of the slow accounts */
  rows_found: number;
} & Record<SlowImportProblem, string[]>;

/** The check as the summary gives it: each problem's count and its first lines. */
export type SlowImportReport = Omit<SlowImportCheck, SlowImportProblem> & Record<SlowImportProblem, { count: number; first: string[] }>;

export function slowImportReport(check: SlowImportCheck, first: number): SlowImportReport {
  const report = { accepted: check.accepted, completed: check.completed, rows_found: check.rows_found } as SlowImportReport;
  for (const problem of Object.keys(SLOW_IMPORT_PROBLEMS) as SlowImportProblem[]) report[problem] = { count: check[problem].length, first: check[problem].slice(0, first) };
  return report;
}

/**
 * The slow accounts' imports against what the senders were told: each file answered 202 is one
 * import, completed, that inserted each of its valid rows once (none updated or unchanged), skipped
 * its invalid ones, and is the import its Idempotency-Key names; no other import of theirs; each of
 * their rows written by its file's import.
 */
export async function checkSlowImports(sql: postgres.Sql, accountIds: string[], records: readonly SlowUploadRecord[]): Promise<SlowImportCheck> {
  const check: SlowImportCheck = { accepted: 0, completed: 0, not_completed: [], extra_imports: [], uploads_left: [], wrong_claims: [], wrong_counts: [], rows_by_another_import: [], rows_found: 0 };
  if (accountIds.length === 0) return check;
  const imports = await sql<{ job_id: string; state: string; received: number; inserted: number; updated: number; unchanged: number; skipped: number }[]>`
    select job_id, state, received, inserted, coalesce(updated, 0)::int as updated, coalesce(unchanged, 0)::int as unchanged, skipped
    from imports where account_id in ${sql(accountIds)}`;
  const rows = await sql<{ title: string; import_job_id: string | null }[]>`
    select title, import_job_id from listings where account_id in ${sql(accountIds)}`;
  const answered = records.filter((r) => r.end === 'answered' && r.importId !== undefined);
  const claims = await claimsOf(
    sql,
    answered.map((r) => r.key),
  );
  const byId = new Map(imports.map((i) => [i.job_id, i]));
  const named = new Set(answered.map((r) => r.importId!));
  check.accepted = named.size;
  const jobOfMarker = new Map<string, string>();
  for (const record of answered) {
    const id = record.importId!;
    for (const marker of markersOf(record.markerPrefix, record.rows, record.invalid).valid) jobOfMarker.set(marker, id);
    const found = byId.get(id);
    if (claims.get(record.key) !== id) check.wrong_claims.push(`${record.key}: 202 named ${id}, the key names ${claims.get(record.key) ?? 'nothing'}`);
    if (found?.state !== 'completed') {
      check.not_completed.push(`${id} ${found?.state ?? 'missing'} (key ${record.key})`);
      continue;
    }
    check.completed += 1;
    const valid = record.rows - record.invalid.length;
    if (found.received !== record.rows || found.inserted !== valid || found.skipped !== record.invalid.length || found.updated + found.unchanged > 0) {
      check.wrong_counts.push(
        `${id} (key ${record.key}): file of ${record.rows} rows, ${record.invalid.length} invalid; import received ${found.received}, inserted ${found.inserted}, updated ${found.updated}, unchanged ${found.unchanged}, skipped ${found.skipped}`,
      );
    }
  }
  for (const imported of imports) {
    if (named.has(imported.job_id)) continue;
    if (imported.state === 'uploading') check.uploads_left.push(imported.job_id);
    else check.extra_imports.push(`${imported.job_id} ${imported.state}: inserted ${imported.inserted}, updated ${imported.updated}, unchanged ${imported.unchanged}`);
  }
  check.rows_found = rows.length;
  for (const row of rows) {
    const expected = jobOfMarker.get(row.title);
    if (expected !== undefined && row.import_job_id !== expected) check.rows_by_another_import.push(`${row.title}: written by ${row.import_job_id}, its file's import is ${expected}`);
  }
  return check;
}
