import type postgres from 'postgres';
import { pause } from './pause.js';
import { percentile } from './stats.js';
import type { SoakLog } from './soak-log.js';
import { rssMb } from './soak-memory.js';
import { jsonOf, retryAfterOf, sendDeaf, sendUpload, type UploadOutcome } from './soak-upload.js';

/**
 * The hostile uploads of the soak: files `POST /v1/api/imports?kind=listings` must refuse, keeping
 * nothing, with memory bounded and, where it can tell early, at once:
 *
 * - `ndjson-one-line`: NDJSON that is one line of `[{},{},…]` tens of MB long: the line fails as
 *   its row past the 1 MiB row bound, unparsed, so the file has no valid row (400 `no valid rows`,
 *   once the whole file has arrived);
 * - `csv-commas`: a CSV header, then one record of tens of MB of commas: a record past the bound
 *   stops the file (400 `The file cannot be read: …`) after its first MiB, the rest unread;
 * - `csv-no-field`: a CSV whose header names no field of a listing (`Title,Price`), then rows:
 *   400 at its first line.
 *
 * Every other upload of the two CSV kinds comes from a deaf client, which goes on sending after
 * the answer: the service must close the connection soon after (it reads and discards for a
 * second), not read the rest of the file.
 */
export const HOSTILE_KINDS = ['ndjson-one-line', 'csv-commas', 'csv-no-field'] as const;
export type HostileKind = (typeof HOSTILE_KINDS)[number];

interface HostileFile {
  contentType: string;
  bytes: number;
  pieces: () => Generator<Buffer>;
  /** why the answer's body is not the refusal expected, or undefined when it is */
  unexpectedBody: (json: Record<string, unknown> | undefined) => string | undefined;
  /** the service can tell from the first MiB, so it must answer before the whole body */
  refusedEarly: boolean;
}

const PIECE_BYTES = 64 * 1024;

/**
 * A file the service can refuse early is sent at full speed for its first 2 MiB (past the 1 MiB
 * row bound it is refused at), and the rest paced to take at least 3 s, at most about 8 MB/s (a
 * fast partner's link; 24 MiB take 3 s either way). note: on the loopback the rest of a refused
 * body is read and discarded at gigabytes a second while the upload is dropped, so the whole file
 * would often be sent before an answer that came at once; paced, an answer before the whole body
 * says the service did not wait for it, and a deaf client still sending when the connection is
 * closed says the service closed it (after its second of discarding) rather than read the file.
 */
const FAST_HEAD_BYTES = 2 * 1024 * 1024;
const TAIL_MIN_MS = 3_000;
const TAIL_GAP_MS = (PIECE_BYTES / (8 * 1024 * 1024)) * 1_000;
/** The smallest hostile file: a tail of 2 MiB after the fast head. */
export const HOSTILE_MIN_BYTES = 2 * FAST_HEAD_BYTES;
/** A piece of `unit` repeated, as close to PIECE_BYTES as whole units allow. */
const pieceOf = (unit: string) => Buffer.from(unit.repeat(Math.floor(PIECE_BYTES / unit.length)));

function* framed(first: string, piece: Buffer, count: number, last: string): Generator<Buffer> {
  yield Buffer.from(first);
  for (let i = 0; i < count; i += 1) yield piece;
  yield Buffer.from(last);
}

const codeOf = (json: Record<string, unknown> | undefined) => (typeof json?.code === 'string' ? json.code : undefined);
const textOf = (json: Record<string, unknown> | undefined) => (typeof json?.error === 'string' ? json.error : '');

/** The hostile file of `kind`, about `bytes` long, made a piece at a time as it is sent (never held whole). */
export function hostileFile(kind: HostileKind, bytes: number): HostileFile {
  if (kind === 'ndjson-one-line') {
    const piece = pieceOf('{},');
    const count = Math.max(1, Math.round(bytes / piece.length));
    return {
      contentType: 'application/x-ndjson',
      bytes: 1 + count * piece.length + 4,
      pieces: () => framed('[', piece, count, '{}]\n'),
      unexpectedBody: (json) => {
        const first = Array.isArray(json?.errors) ? (json.errors[0] as { reason?: unknown } | undefined) : undefined;
        if (codeOf(json) !== 'no_valid_rows') return `expected code no_valid_rows, got ${codeOf(json)}`;
        return typeof first?.reason === 'string' && first.reason.includes('longer than') ? undefined : `expected the line to fail as too long, got ${JSON.stringify(first)}`;
      },
      refusedEarly: false,
    };
  }
  if (kind === 'csv-commas') {
    const piece = pieceOf(',');
    const count = Math.max(1, Math.round(bytes / piece.length));
    return {
      contentType: 'text/csv',
      bytes: 'title,price_cents\n'.length + count * piece.length + 1,
      pieces: () => framed('title,price_cents\n', piece, count, '\n'),
      unexpectedBody: (json) =>
        codeOf(json) === 'file_unreadable' && textOf(json).includes('longer than') ? undefined : `expected file_unreadable for a record too long, got ${codeOf(json)}: ${textOf(json).slice(0, 200)}`,
      refusedEarly: true,
    };
  }
  const piece = pieceOf('Soak hostile row,500\n');
  const count = Math.max(1, Math.round(bytes / piece.length));
  return {
    contentType: 'text/csv',
    bytes: 'Title,Price\n'.length + count * piece.length,
    pieces: () => framed('Title,Price\n', piece, count, ''),
    unexpectedBody: (json) =>
      codeOf(json) === 'file_unreadable' && textOf(json).includes('header') ? undefined : `expected file_unreadable for the header, got ${codeOf(json)}: ${textOf(json).slice(0, 200)}`,
    refusedEarly: true,
  };
}

/** One hostile upload and what came of it. */
export interface HostileAttempt {
  kind: HostileKind;
  requestId: string;
  atMs: number;
  /** the status, or what happened instead of an answer */
  outcome: number | 'connection-error' | 'timed-out';
  /** the answer's error code, or the connection's error */
  detail?: string;
  answerMs?: number;
  sentAtAnswer?: number;
  wholeBodyFirst?: boolean;
  connectionClose?: boolean;
  errorAfterAnswer?: string;
  /** sent by a client that went on sending after the answer */
  deaf: boolean;
  /** a deaf client: what it sent after the answer, whether that was the whole body, and when the service closed the connection */
  sentAfterAnswer?: number;
  wholeBodyAfterAnswer?: boolean;
  closedAfterAnswerMs?: number;
  /** the API's resident memory before the upload, and its peak while it was in flight (MB) */
  rssBeforeMb?: number;
  rssPeakMb?: number;
  /** refused as the kind must be; deferred (429/503 with Retry-After: the service was busy, not wrong); anything else */
  verdict: 'refused' | 'deferred' | 'unexpected';
  why?: string;
}

export interface HostileContext {
  port: number;
  /** the hostile account's key */
  key: string;
  /** about how many bytes each hostile file holds */
  bytes: number;
  /** the pause between one sender's uploads */
  pauseMs: number;
  /** the API process, whose memory is sampled while each upload is in flight */
  apiPid: number | undefined;
  now(): number;
  stop: AbortSignal;
  abort: AbortSignal;
  log: SoakLog;
  attempts: HostileAttempt[];
}

/** Longer than any of these files takes to send on the loopback, even on a busy machine. */
const HOSTILE_TIMEOUT_MS = 120_000;
const RSS_EVERY_MS = 100;

/** What an answer says of a hostile upload of `file`. */
function judge(file: HostileFile, outcome: Extract<UploadOutcome, { kind: 'answered' }>): Pick<HostileAttempt, 'verdict' | 'why'> {
  const json = jsonOf(outcome.body);
  if ((outcome.status === 429 || outcome.status === 503) && retryAfterOf(outcome.headers) !== undefined) return { verdict: 'deferred' };
  if (outcome.status !== 400) return { verdict: 'unexpected', why: `answered ${outcome.status}, expected 400: ${outcome.body.slice(0, 300)}` };
  const wrongBody = file.unexpectedBody(json);
  if (wrongBody !== undefined) return { verdict: 'unexpected', why: wrongBody };
  if (file.refusedEarly && outcome.wholeBodyFirst) return { verdict: 'unexpected', why: `answered only after the whole body (${file.bytes} bytes) was sent, in ${Math.round(outcome.answerMs)} ms` };
  if (file.refusedEarly && outcome.headers.connection !== 'close') return { verdict: 'unexpected', why: `refused mid-body without Connection: close (connection: ${outcome.headers.connection})` };
  const after = outcome.afterAnswer;
  if (after?.wholeBody === true) {
    return { verdict: 'unexpected', why: `a client deaf to the answer sent the rest of the body (${after.sent} bytes after the answer) and the connection was ${after.closedAfterMs === undefined ? 'still open' : `closed ${Math.round(after.closedAfterMs)} ms after the answer`}` };
  }
  return { verdict: 'refused' };
}

/** The wait before each piece of a file of `bytes`: none for the head, then the tail's pace. */
function paced(bytes: number): () => number {
  const tailPieces = Math.max(1, Math.ceil((bytes - FAST_HEAD_BYTES) / PIECE_BYTES));
  const gapMs = Math.max(TAIL_GAP_MS, TAIL_MIN_MS / tailPieces);
  let sent = 0;
  return () => {
    sent += PIECE_BYTES;
    return sent < FAST_HEAD_BYTES ? 0 : gapMs;
  };
}

async function sendHostile(ctx: HostileContext, kind: HostileKind, requestId: string, deaf: boolean): Promise<HostileAttempt> {
  const file = hostileFile(kind, ctx.bytes);
  const attempt: HostileAttempt = { kind, requestId, atMs: Math.round(ctx.now()), outcome: 'connection-error', deaf, verdict: 'unexpected' };
  const before = rssMb(ctx.apiPid);
  let peak = before;
  const sampler = setInterval(() => {
    const mb = rssMb(ctx.apiPid);
    if (mb !== undefined) peak = Math.max(peak ?? 0, mb);
  }, RSS_EVERY_MS);
  let outcome: UploadOutcome;
  try {
    const upload = {
      port: ctx.port,
      path: '/v1/api/imports?kind=listings',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': file.contentType, 'content-length': String(file.bytes), 'x-request-id': requestId },
      pieces: file.pieces(),
      ...(file.refusedEarly ? { gapMs: paced(file.bytes) } : {}),
      timeoutMs: HOSTILE_TIMEOUT_MS,
      signal: ctx.abort,
    };
    outcome = deaf ? await sendDeaf({ ...upload, bytes: file.bytes }) : await sendUpload(upload);
  } finally {
    clearInterval(sampler);
  }
  const after = rssMb(ctx.apiPid);
  if (after !== undefined) peak = Math.max(peak ?? 0, after);
  if (before !== undefined) attempt.rssBeforeMb = before;
  if (peak !== undefined) attempt.rssPeakMb = peak;
  if (outcome.kind !== 'answered') {
    attempt.outcome = outcome.kind === 'timed-out' ? 'timed-out' : 'connection-error';
    attempt.detail = outcome.kind === 'connection-error' ? outcome.error : outcome.kind;
    attempt.why = `no answer (${attempt.detail}) after ${outcome.sent} bytes`;
    return attempt;
  }
  const json = jsonOf(outcome.body);
  Object.assign(attempt, {
    outcome: outcome.status,
    detail: codeOf(json) ?? `(no code) ${outcome.body.slice(0, 100)}`,
    answerMs: Math.round(outcome.answerMs),
    sentAtAnswer: outcome.sentAtAnswer,
    wholeBodyFirst: outcome.wholeBodyFirst,
    connectionClose: outcome.headers.connection === 'close',
    ...(outcome.errorAfterAnswer === undefined ? {} : { errorAfterAnswer: outcome.errorAfterAnswer }),
    ...(outcome.afterAnswer === undefined
      ? {}
      : {
          sentAfterAnswer: outcome.afterAnswer.sent,
          wholeBodyAfterAnswer: outcome.afterAnswer.wholeBody,
          ...(outcome.afterAnswer.closedAfterMs === undefined ? {} : { closedAfterAnswerMs: Math.round(outcome.afterAnswer.closedAfterMs) }),
        }),
    ...judge(file, outcome),
  });
  return attempt;
}

/**
 * One hostile client: the three kinds in turn, one upload at a time (the account's file-import
 * cap allows two in progress), a pause between them, until the load stops.
 */
export async function runHostileSender(ctx: HostileContext, sender: number): Promise<void> {
  const stopOrAbort = AbortSignal.any([ctx.stop, ctx.abort]);
  for (let n = 0; !stopOrAbort.aborted; n += 1) {
    const kind = HOSTILE_KINDS[(n + sender) % HOSTILE_KINDS.length]!;
    // note: every other round of the three kinds, the CSV ones come from a deaf client.
    const deaf = hostileFile(kind, 0).refusedEarly && Math.floor(n / HOSTILE_KINDS.length) % 2 === 1;
    const attempt = await sendHostile(ctx, kind, `soak-hostile${sender}-${n + 1}`, deaf);
    ctx.attempts.push(attempt);
    if (attempt.verdict !== 'refused') {
      ctx.log.note(`hostile ${attempt.requestId} ${kind} -> ${attempt.outcome} ${attempt.detail ?? ''} (${attempt.verdict}${attempt.why ? `: ${attempt.why}` : ''})`);
    }
    await pause(ctx.pauseMs * (0.5 + Math.random()), stopOrAbort);
  }
}

export interface HostileKindReport {
  body_mb: number;
  sent: number;
  refused_as_expected: number;
  /** 429/503 with Retry-After: the service was busy, and said when to come back */
  deferred: number;
  unexpected: number;
  /** status and error code, or what happened instead of an answer */
  answers: Record<string, number>;
  answer_ms: { p50: number; max: number };
  /** body sent when the answer came, MB */
  sent_at_answer_mb: { p50: number; max: number };
  answered_before_whole_body: number;
  with_connection_close: number;
  /** the connection's errors once the answer was in (the client stopped sending) */
  errors_after_answer: Record<string, number>;
  /** the API's resident memory while one was in flight, above what it was before it (MB) */
  api_rss_growth_mb: { p50: number; max: number };
  /** sent by clients that went on sending after the answer: when the service closed the connection, what they sent after the answer, and how many sent the whole body */
  deaf: { sent: number; closed_after_answer_ms: { p50: number; max: number }; sent_after_answer_mb: { p50: number; max: number }; whole_body_sent: number };
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 102.4) / 10;

/** Per kind: how many, what came back, how soon, how much was sent by then, and the API's memory meanwhile. */
export function hostileReport(attempts: readonly HostileAttempt[], bytes: number): Record<HostileKind, HostileKindReport> {
  const report = {} as Record<HostileKind, HostileKindReport>;
  for (const kind of HOSTILE_KINDS) {
    const mine = attempts.filter((a) => a.kind === kind);
    const answered = mine.filter((a) => typeof a.outcome === 'number');
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const p50max = (values: number[]) => {
      const s = sorted(values);
      return { p50: Math.round(percentile(s, 50) || 0), max: Math.round(s.at(-1) ?? 0) };
    };
    const sentAt = sorted(answered.map((a) => a.sentAtAnswer ?? 0));
    const growth = mine.filter((a) => a.rssBeforeMb !== undefined && a.rssPeakMb !== undefined).map((a) => a.rssPeakMb! - a.rssBeforeMb!);
    const deaf = mine.filter((a) => a.deaf);
    const sentAfter = sorted(deaf.map((a) => a.sentAfterAnswer ?? 0));
    const count = (values: string[]) => values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {});
    report[kind] = {
      body_mb: mb(hostileFile(kind, bytes).bytes),
      sent: mine.length,
      refused_as_expected: mine.filter((a) => a.verdict === 'refused').length,
      deferred: mine.filter((a) => a.verdict === 'deferred').length,
      unexpected: mine.filter((a) => a.verdict === 'unexpected').length,
      answers: count(mine.map((a) => `${a.outcome}${a.detail ? ` ${a.detail}` : ''}`)),
      answer_ms: p50max(answered.map((a) => a.answerMs ?? 0)),
      sent_at_answer_mb: { p50: mb(percentile(sentAt, 50) || 0), max: mb(sentAt.at(-1) ?? 0) },
      answered_before_whole_body: answered.filter((a) => a.wholeBodyFirst === false).length,
      with_connection_close: answered.filter((a) => a.connectionClose === true).length,
      errors_after_answer: count(mine.flatMap((a) => (a.errorAfterAnswer === undefined ? [] : [a.errorAfterAnswer]))),
      api_rss_growth_mb: p50max(growth),
      deaf: {
        sent: deaf.length,
        closed_after_answer_ms: p50max(deaf.flatMap((a) => (a.closedAfterAnswerMs === undefined ? [] : [a.closedAfterAnswerMs]))),
        sent_after_answer_mb: { p50: mb(percentile(sentAfter, 50) || 0), max: mb(sentAfter.at(-1) ?? 0) },
        whole_body_sent: deaf.filter((a) => a.wholeBodyAfterAnswer === true).length,
      },
    };
  }
  return report;
}

/** A line for an unexpected answer in the summary. */
export function hostileLine(attempt: HostileAttempt): string {
  return `${attempt.requestId} ${attempt.kind}${attempt.deaf ? ' (deaf)' : ''} +${(attempt.atMs / 1000).toFixed(1)}s -> ${attempt.outcome} ${attempt.detail ?? ''}${attempt.answerMs === undefined ? '' : ` in ${attempt.answerMs} ms`}: ${attempt.why ?? attempt.verdict}`;
}

/** What the accounts hold after the load: their imports by state (an upload refused leaves none), and their rows. */
export async function keptByAccounts(sql: postgres.Sql, accountIds: string[]): Promise<{ imports: Record<string, number>; rows: number }> {
  if (accountIds.length === 0) return { imports: {}, rows: 0 };
  const imports = await sql<{ state: string; n: number }[]>`
    select state, count(*)::int as n from imports where account_id in ${sql(accountIds)} group by state`;
  const [rows] = await sql<{ n: number }[]>`
    select (select count(*)::int from listings where account_id in ${sql(accountIds)}) + (select count(*)::int from machines where account_id in ${sql(accountIds)}) as n`;
  return { imports: Object.fromEntries(imports.map((row) => [row.state, row.n])), rows: rows!.n };
}
