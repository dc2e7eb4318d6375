import { once } from 'node:events';
import { pause } from './pause.js';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { requestHead } from '../../test/support/raw-http.js';
import { completeAnswer } from './soak-hang-up.js';

/** A file sent piece by piece over a connection of its own, as a partner's upload streams it. */
export interface UploadRequest {
  port: number;
  path: string;
  /** with `content-length` the body is sent as declared; without, chunked */
  headers: Record<string, string>;
  /**
   * the body's pieces, made as they are written; each waits for the one before to drain. An
   * async one may also hold a piece back until something else has happened.
   */
  pieces: Iterable<Buffer> | AsyncIterable<Buffer>;
  /** the wait before each piece after the first: the trickle of a slow upload */
  gapMs?: () => number;
  /** close the connection after this many pieces, or after the whole body before its answer ('all') */
  hangUpAfter?: number | 'all';
  /** the hang-up closes with a reset (RST) rather than a FIN */
  reset?: boolean;
  /** the whole exchange, from the connection to the last byte of the answer */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** What came of an upload: an answer (whatever happened to the body after it), or none. */
export type UploadOutcome =
  | {
      kind: 'answered';
      status: number;
      headers: IncomingHttpHeaders;
      body: string;
      /** from the start to the answer's head */
      answerMs: number;
      /** body bytes handed to the socket when the answer's head arrived */
      sentAtAnswer: number;
      /** the whole body had been handed to the socket when the answer's head arrived */
      wholeBodyFirst: boolean;
      /** the error the connection met once the answer was in (EPIPE, ECONNRESET): the answer is what counts */
      errorAfterAnswer?: string;
      /** sendDeaf: what was sent after the answer, and when the service closed the connection */
      afterAnswer?: { sent: number; wholeBody: boolean; closedAfterMs: number | undefined };
    }
  | { kind: 'hung-up'; sent: number }
  | { kind: 'connection-error'; error: string; sent: number }
  | { kind: 'timed-out'; sent: number };

/** The most of an answer's body kept: refusals are short, and a 202 is one import. */
const ANSWER_MAX_BYTES = 64 * 1024;

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error as Error).message ?? String(error);

/**
 * Sends an upload and reads its answer. The body is written a piece at a time, each once the
 * socket has taken the one before, and no more once the answer has come: a service that refuses
 * a file mid-body answers at once and closes the connection (`Connection: close`), and the rest
 * would meet a closed socket. An EPIPE or ECONNRESET after the answer is noted, not a failure.
 *
 * note: node:http rather than undici: its request is a plain writable, so the writing can stop at
 * any piece, and a hang-up can close the socket at a chosen moment without a retry of its own.
 */
export async function sendUpload(upload: UploadRequest): Promise<UploadOutcome> {
  const started = performance.now();
  /** the answer is in, or none will come */
  const settled = new AbortController();
  const stopWriting = settled.signal;
  // note: keep-alive asked for, as a partner's client does, so that an answer's `Connection: close`
  // is the service's own decision (without an agent Node would ask for close itself).
  const req = request({ host: '127.0.0.1', port: upload.port, method: 'POST', path: upload.path, headers: { connection: 'keep-alive', ...upload.headers }, agent: false });
  let sent = 0;
  let whole = false;
  let hungUp = false;
  let timedOut = false;
  let failure: string | undefined;
  let errorAfterAnswer: string | undefined;
  let head: { at: number; sent: number; whole: boolean; status: number; headers: IncomingHttpHeaders } | undefined;
  let answer: string | undefined;

  req.on('response', (res) => {
    head = { at: performance.now(), sent, whole, status: res.statusCode ?? 0, headers: res.headers };
    const parts: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      if (size < ANSWER_MAX_BYTES) parts.push(chunk);
      size += chunk.length;
    });
    res.once('end', () => {
      answer = Buffer.concat(parts).subarray(0, ANSWER_MAX_BYTES).toString('utf8');
      settled.abort();
    });
    res.once('error', (error) => {
      if (answer === undefined) failure ??= codeOf(error);
      settled.abort();
    });
  });
  req.on('error', (error) => {
    if (answer !== undefined) errorAfterAnswer ??= codeOf(error);
    else if (!hungUp) failure ??= timedOut ? 'timed out' : codeOf(error);
    settled.abort();
  });
  req.once('close', () => {
    // note: the answer's 'end' comes before the request's close; a close without either lost it.
    if (answer === undefined && !hungUp) failure ??= 'closed without an answer';
    setImmediate(() => settled.abort());
  });
  const timer = setTimeout(() => {
    timedOut = true;
    req.destroy(new Error('timed out'));
  }, upload.timeoutMs);
  const onAbort = () => req.destroy(new Error('interrupted'));
  upload.signal?.addEventListener('abort', onAbort, { once: true });

  const hangUp = () => {
    hungUp = true;
    if (upload.reset === true && req.socket !== null) req.socket.resetAndDestroy();
    else req.destroy();
    settled.abort();
  };

  try {
    let written = 0;
    for await (const piece of upload.pieces) {
      if (stopWriting.aborted) break;
      const gap = written > 0 && upload.gapMs !== undefined ? upload.gapMs() : 0;
      if (gap > 0) {
        await pause(gap, stopWriting);
        if (stopWriting.aborted) break;
      }
      if (upload.hangUpAfter === written) {
        hangUp();
        break;
      }
      const drained = req.write(piece);
      sent += piece.length;
      written += 1;
      if (!drained) await once(req, 'drain', { signal: stopWriting }).catch(() => undefined);
    }
    if (!stopWriting.aborted) {
      whole = true;
      req.end();
      if (upload.hangUpAfter === 'all') {
        // note: the file is whole; closing a few milliseconds later lands before, during or
        // after the acceptance, which the retry must meet whichever it was.
        await pause(Math.random() * 30, settled.signal);
        if (!settled.signal.aborted) hangUp();
      }
    }
    if (!settled.signal.aborted) await once(settled.signal, 'abort');
  } finally {
    clearTimeout(timer);
    upload.signal?.removeEventListener('abort', onAbort);
    // note: every way out leaves the socket closed: no agent keeps it for another request.
    if (!req.destroyed) req.destroy();
  }

  if (head !== undefined && answer !== undefined) {
    return {
      kind: 'answered',
      status: head.status,
      headers: head.headers,
      body: answer,
      answerMs: head.at - started,
      sentAtAnswer: head.sent,
      wholeBodyFirst: head.whole,
      ...(errorAfterAnswer === undefined ? {} : { errorAfterAnswer }),
    };
  }
  if (hungUp) return { kind: 'hung-up', sent };
  if (timedOut) return { kind: 'timed-out', sent };
  return { kind: 'connection-error', error: failure ?? 'no answer', sent };
}

/** The answer's JSON body, or undefined when it is none. */
export function jsonOf(body: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(body) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The answer's Retry-After in seconds, when it carries one. */
export function retryAfterOf(headers: IncomingHttpHeaders): number | undefined {
  const value = Number(headers['retry-after']);
  return headers['retry-after'] !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** How long a deaf client that has sent its whole body waits, once answered, for the service to close the connection. */
const DEAF_CLOSE_WAIT_MS = 2_000;

/**
 * Sends a body of declared length over a plain socket and goes on sending it after the answer, as
 * a client that does not read answers would, until the service closes the connection or the body
 * ends: what the service does with a client that ignores its refusal (it should close the
 * connection soon after answering, and not read the rest).
 *
 * note: a plain socket, half-open allowed: node:http closes its own side once an answer says
 * `Connection: close`, and a socket that is not half-open ends its side at the service's FIN,
 * either of which would stop the sending here rather than there.
 */
export async function sendDeaf(upload: Omit<UploadRequest, 'hangUpAfter' | 'reset' | 'pieces'> & { pieces: Iterable<Buffer>; bytes: number }): Promise<UploadOutcome> {
  const started = performance.now();
  const closed = new AbortController();
  const socket = connect({ port: upload.port, host: '127.0.0.1', allowHalfOpen: true });
  const received: Buffer[] = [];
  let receivedBytes = 0;
  let sent = 0;
  let whole = false;
  let answer: { at: number; sent: number; whole: boolean; status: number; headers: Record<string, string>; body: string } | undefined;
  let failure: string | undefined;
  let errorAfterAnswer: string | undefined;
  let closedAt: number | undefined;
  const markClosed = () => {
    closedAt ??= performance.now();
    closed.abort();
  };
  socket.on('data', (chunk: Buffer) => {
    if (answer !== undefined || receivedBytes > ANSWER_MAX_BYTES) return;
    received.push(chunk);
    receivedBytes += chunk.length;
    const complete = completeAnswer(Buffer.concat(received));
    if (complete !== undefined) answer = { at: performance.now(), sent, whole, ...complete };
  });
  socket.on('error', (error) => {
    if (answer !== undefined) errorAfterAnswer ??= codeOf(error);
    else failure ??= codeOf(error);
    markClosed();
  });
  socket.once('close', markClosed);
  const timer = setTimeout(() => {
    failure ??= 'timed out';
    socket.destroy();
  }, upload.timeoutMs);
  const onAbort = () => socket.destroy();
  upload.signal?.addEventListener('abort', onAbort, { once: true });
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(pause);
        closed.signal.removeEventListener('abort', done);
        resolve();
      };
      const pause = setTimeout(done, Math.max(0, ms));
      closed.signal.addEventListener('abort', done, { once: true });
    });
  const write = async (data: string | Buffer): Promise<void> => {
    if (closed.signal.aborted) return;
    if (!socket.write(data)) await once(socket, 'drain', { signal: closed.signal }).catch(() => undefined);
  };

  try {
    // note: the length is declared once, from `bytes` (requestHead writes it).
    const headers = Object.fromEntries(Object.entries(upload.headers).filter(([name]) => name.toLowerCase() !== 'content-length'));
    await write(requestHead('POST', upload.path, { connection: 'keep-alive', ...headers }, upload.bytes));
    let written = 0;
    for (const piece of upload.pieces) {
      if (closed.signal.aborted) break;
      const gap = written > 0 && upload.gapMs !== undefined ? upload.gapMs() : 0;
      if (gap > 0) await wait(gap);
      if (closed.signal.aborted) break;
      await write(piece);
      sent += piece.length;
      written += 1;
    }
    if (!closed.signal.aborted) {
      whole = true;
      // note: the whole body sent, the answer may still be coming; once it is in, the service has a moment to close.
      while (!closed.signal.aborted && (answer === undefined || performance.now() - answer.at < DEAF_CLOSE_WAIT_MS)) await wait(50);
    }
  } finally {
    clearTimeout(timer);
    upload.signal?.removeEventListener('abort', onAbort);
    socket.destroy();
  }
  if (answer === undefined) return failure === 'timed out' ? { kind: 'timed-out', sent } : { kind: 'connection-error', error: failure ?? 'no answer', sent };
  return {
    kind: 'answered',
    status: answer.status,
    headers: answer.headers,
    body: answer.body,
    answerMs: answer.at - started,
    sentAtAnswer: answer.sent,
    wholeBodyFirst: answer.whole,
    ...(errorAfterAnswer === undefined ? {} : { errorAfterAnswer }),
    afterAnswer: { sent: sent - answer.sent, wholeBody: whole, closedAfterMs: closedAt === undefined || closedAt < answer.at ? undefined : closedAt - answer.at },
  };
}
