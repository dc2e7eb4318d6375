import { randomUUID } from 'node:crypto';
import type { Pool } from 'undici';
import { API_ERRORS } from '../../src/shared/errors/api-errors.js';
import type { CapWatch } from './soak-cap-watch.js';
import { HANG_UP_MOMENTS, sendAndHangUp, type HangUpMoment } from './soak-hang-up.js';
import type { SoakLog } from './soak-log.js';
import { markerPrefixOf, newLogicalImport, type LogicalImport } from './soak-rows.js';

/** One request of a logical import. */
export interface Attempt {
  n: number;
  /** the X-Request-Id sent, `soak-<client>-<seq>-a<n>`: the API and worker logs carry it */
  requestId: string;
  atMs: number;
  ms: number;
  /** sent over a socket closed at this moment */
  hangUp?: HangUpMoment;
  /** the hang-up closed with a reset rather than a FIN */
  reset?: boolean;
  /** the HTTP status, or what happened instead of an answer */
  outcome: number | 'hung-up' | 'connection-error' | 'timed-out';
  /** the error text of an answer other than 201, or the connection error */
  detail?: string;
  replayed?: boolean;
}

export type ImportEnd = 'answered' | 'unserved' | 'refused' | 'interrupted';

/** What a client went through to get one request answered: its attempts and how it ended. */
export interface ServedRecord {
  startedAtMs: number;
  attempts: Attempt[];
  end?: ImportEnd;
  answeredAtMs?: number;
}

/** A logical import and everything its client went through to get it in. */
export interface ImportRecord extends Omit<LogicalImport, 'body'>, ServedRecord {
  markerPrefix: string;
  /** a 201 whose counts do not match the rows sent */
  bodyMismatch?: string;
}

/** One request a client means to get answered, sent again, the same bytes with the same Idempotency-Key, until it is. */
export interface SoakRequest {
  path: string;
  body: string;
  idempotencyKey: string;
  /** attempts carry `X-Request-Id: <prefix>-a<n>` */
  requestIdPrefix: string;
  /** whose key it goes with (`ClientContext.keys`) */
  client: number;
  accountIndex: number;
  /** the answer that ends it: 201 for an import, 200 for an archive or a delete */
  success: number;
  /** how the soak's notes name it */
  label: string;
}

export interface RequestStats {
  /** by status, and `hung-up`, `connection-error`, `timed-out` */
  byOutcome: Record<string, number>;
  /** answers other than 201 by status and error text, e.g. `503 Import failed; nothing was written` */
  byError: Record<string, number>;
  hangUps: Record<HangUpMoment, number>;
  /** hang-ups that closed with a reset (the rest with a FIN) */
  hangUpResets: number;
  /** requests meant to hang up whose whole answer came first */
  hangUpsAnsweredFirst: number;
}

export interface ClientContext {
  pool: Pool;
  port: number;
  /** the API key of each client */
  keys: string[];
  accountOf(client: number): number;
  hangUpShare: number;
  unservedAfterMs: number;
  /** mean pause between a client's logical imports */
  pauseMs: number;
  /** ms since the soak started */
  now(): number;
  /** the load is over: start no new import, finish the one in hand */
  stop: AbortSignal;
  /** interrupted: give up at once */
  abort: AbortSignal;
  stats: RequestStats;
  capWatch: CapWatch;
  log: SoakLog;
  records: ImportRecord[];
  inFlight: { requests: number };
}

const CAPPED = API_ERRORS.tooManyConcurrent.text;
/** The longest a single request may take: longer than the API's own 60 s import timeout. */
const REQUEST_TIMEOUT_MS = 90_000;

export function newRequestStats(): RequestStats {
  return {
    byOutcome: {},
    byError: {},
    hangUps: Object.fromEntries(HANG_UP_MOMENTS.map((moment) => [moment, 0])) as Record<HangUpMoment, number>,
    hangUpsAnsweredFirst: 0,
    hangUpResets: 0,
  };
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

export interface Answer {
  status: number;
  retryAfterSec: number | undefined;
  replayed: boolean;
  json: Record<string, unknown> | undefined;
}

function answerOf(status: number, headers: Record<string, string | string[] | undefined>, text: string): Answer {
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  const retryAfter = headers['retry-after'];
  const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  return {
    status,
    retryAfterSec: retryAfter !== undefined && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined,
    replayed: headers['idempotent-replayed'] === 'true',
    json,
  };
}

/** What a 201 must say of the rows sent: every valid row inserted, exactly the invalid ones skipped. */
function mismatchOf(record: ImportRecord, json: Record<string, unknown> | undefined): string | undefined {
  const errors = Array.isArray(json?.errors) ? (json.errors as { index?: unknown }[]) : undefined;
  const indexes = errors?.map((e) => e.index);
  const valid = record.rows - record.invalid.length;
  if (json?.inserted === valid && json.skipped === record.invalid.length && JSON.stringify(indexes) === JSON.stringify(record.invalid)) return undefined;
  return `expected inserted ${valid}, skipped ${record.invalid.length} at ${JSON.stringify(record.invalid)}; got ${JSON.stringify(json).slice(0, 300)}`;
}

/** One attempt: a plain request on the client's pool, or one on a socket it hangs up. */
async function attemptOnce(ctx: ClientContext, request: SoakRequest, attempt: Attempt, deadlineMs: number): Promise<Answer | undefined> {
  const { path, body } = request;
  const headers = {
    authorization: `Bearer ${ctx.keys[request.client]}`,
    'content-type': 'application/json',
    'idempotency-key': request.idempotencyKey,
    'x-request-id': attempt.requestId,
  };
  if (attempt.hangUp !== undefined) {
    ctx.stats.hangUps[attempt.hangUp] += 1;
    if (attempt.reset) ctx.stats.hangUpResets += 1;
    const outcome = await sendAndHangUp({ port: ctx.port, path, headers, body, moment: attempt.hangUp, reset: attempt.reset === true });
    if (outcome.hungUp) {
      attempt.outcome = 'hung-up';
      return undefined;
    }
    if ('error' in outcome) {
      attempt.outcome = 'connection-error';
      attempt.detail = outcome.error;
      return undefined;
    }
    ctx.stats.hangUpsAnsweredFirst += 1;
    return answerOf(outcome.status, outcome.headers, outcome.body);
  }
  // note: a partner gives up on a request at its own deadline; that closes the connection too.
  const timeout = AbortSignal.timeout(Math.round(Math.max(1_000, Math.min(REQUEST_TIMEOUT_MS, deadlineMs - ctx.now()))));
  try {
    const reply = await ctx.pool.request({
      path,
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.any([timeout, ctx.abort]),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    return answerOf(reply.statusCode, reply.headers, await reply.body.text());
  } catch (error) {
    const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    attempt.outcome = timeout.aborted ? 'timed-out' : 'connection-error';
    attempt.detail = err.code ?? err.cause?.code ?? err.name;
    return undefined;
  }
}

/**
 * Sends one request until it is answered `success`: the same body with the same Idempotency-Key
 * every time, as a partner retrying a 5xx, a 429 (after Retry-After) or a lost connection would.
 * Gives up as `unserved` after `unservedAfterMs` from `record.startedAtMs`, and as `refused` on
 * any other answer (a 4xx says nothing was written and retrying will not help). Resolves with
 * the answer that ended it, or undefined when none did.
 */
export async function serveRequest(ctx: ClientContext, request: SoakRequest, record: ServedRecord): Promise<Answer | undefined> {
  const deadlineMs = record.startedAtMs + ctx.unservedAfterMs;
  for (let n = 1; ; n += 1) {
    if (ctx.abort.aborted) {
      record.end = 'interrupted';
      return undefined;
    }
    if (ctx.now() >= deadlineMs) {
      record.end = 'unserved';
      ctx.log.note(`unserved: ${request.label} after ${n - 1} attempts`);
      return undefined;
    }
    const attempt: Attempt = {
      n,
      requestId: `${request.requestIdPrefix}-a${n}`,
      atMs: Math.round(ctx.now()),
      ms: 0,
      outcome: 'connection-error',
      ...(Math.random() < ctx.hangUpShare ? { hangUp: HANG_UP_MOMENTS[Math.floor(Math.random() * HANG_UP_MOMENTS.length)]!, reset: Math.random() < 0.5 } : {}),
    };
    record.attempts.push(attempt);
    ctx.inFlight.requests += 1;
    const started = ctx.now();
    const answer = await attemptOnce(ctx, request, attempt, deadlineMs).finally(() => {
      ctx.inFlight.requests -= 1;
    });
    attempt.ms = Math.round(ctx.now() - started);
    let waitMs: number;
    if (answer === undefined) {
      ctx.stats.byOutcome[attempt.outcome] = (ctx.stats.byOutcome[attempt.outcome] ?? 0) + 1;
      // note: a partner whose connection dropped sends again at once; the first request may
      // still be running in the API, which is the race a repeat must survive.
      waitMs = Math.random() * 200;
    } else {
      attempt.outcome = answer.status;
      ctx.stats.byOutcome[answer.status] = (ctx.stats.byOutcome[answer.status] ?? 0) + 1;
      const error = typeof answer.json?.error === 'string' ? answer.json.error : undefined;
      ctx.capWatch.record(request.accountIndex, ctx.now(), answer.status === 429 && error === CAPPED);
      if (answer.status === request.success) {
        record.end = 'answered';
        record.answeredAtMs = Math.round(ctx.now());
        if (answer.replayed) attempt.replayed = true;
        return answer;
      }
      attempt.detail = error ?? `(no error text) ${JSON.stringify(answer.json)?.slice(0, 200)}`;
      const label = `${answer.status} ${attempt.detail}`;
      ctx.stats.byError[label] = (ctx.stats.byError[label] ?? 0) + 1;
      const retryable = answer.status === 408 || answer.status === 429 || answer.status >= 500;
      if (!retryable) {
        record.end = 'refused';
        ctx.log.note(`refused: ${request.label} req=${attempt.requestId} -> ${label}`);
        return answer;
      }
      waitMs = answer.retryAfterSec !== undefined ? answer.retryAfterSec * 1_000 : 250 * 2 ** Math.min(n - 1, 3);
      waitMs += Math.random() * 250;
    }
    ctx.log.note(
      `${request.label} req=${attempt.requestId}${attempt.hangUp ? ` hang-up=${attempt.hangUp}${attempt.reset ? '/rst' : '/fin'}` : ''} -> ${attempt.outcome}${attempt.detail ? ` (${attempt.detail})` : ''} in ${attempt.ms} ms`,
    );
    await sleep(Math.min(waitMs, deadlineMs - ctx.now()), ctx.abort);
  }
}

/** Sends one logical import until it is answered 201 (serveRequest), and checks what the 201 says. */
async function serveImport(ctx: ClientContext, logical: LogicalImport): Promise<void> {
  const { body, ...fields } = logical;
  const record: ImportRecord = { ...fields, markerPrefix: markerPrefixOf(logical.client, logical.seq), startedAtMs: ctx.now(), attempts: [] };
  ctx.records.push(record);
  const answer = await serveRequest(
    ctx,
    {
      path: `/v1/api/${record.kind}/bulk`,
      body,
      idempotencyKey: record.key,
      requestIdPrefix: record.markerPrefix,
      client: record.client,
      accountIndex: record.accountIndex,
      success: 201,
      label: `client=${record.client} import=${record.seq} key=${record.key}`,
    },
    record,
  );
  if (record.end !== 'answered') return;
  const mismatch = mismatchOf(record, answer?.json);
  if (mismatch !== undefined) {
    record.bodyMismatch = mismatch;
    ctx.log.note(`201 with wrong counts: key=${record.key} ${mismatch}`);
  }
}

/** One partner: logical imports one after another, with a pause between them, until the load stops. */
export async function runClient(ctx: ClientContext, client: number): Promise<void> {
  const stopOrAbort = AbortSignal.any([ctx.stop, ctx.abort]);
  for (let seq = 1; !stopOrAbort.aborted; seq += 1) {
    const logical = newLogicalImport(client, seq, ctx.accountOf(client), `soak-${client}-${seq}-${randomUUID()}`);
    await serveImport(ctx, logical);
    await sleep(ctx.pauseMs * (0.5 + Math.random()), stopOrAbort);
  }
}
