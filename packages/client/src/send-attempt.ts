import { Readable } from 'node:stream';
import type { AttemptResult } from './attempt-result.js';
import { describeNetworkFailure } from './network-failure.js';
import { readAtMost } from './read-at-most.js';
import { MAX_REPLY_BYTES } from './reply-limit.js';

/** Where and how every attempt is sent. */
export interface TransportOptions {
  /** e.g. `https://api.example.com`; a path in it is kept (`https://example.com/bulk/`) */
  baseUrl: string;
  apiKey: string;
  /** per attempt, in milliseconds, reading the reply included */
  timeoutMs: number;
  userAgent: string;
  /** the largest reply read (default MAX_REPLY_BYTES) */
  maxReplyBytes?: number;
  /** the fetch to send with (default: Node's own) */
  fetch?: typeof fetch;
}

export interface AttemptRequest {
  method: 'GET' | 'POST';
  /** relative to the base URL, e.g. `v1/api/imports/<id>` */
  path: string;
  headers?: Record<string, string>;
  /** a Readable is streamed as it is read, never held whole: each attempt needs a fresh one */
  body?: string | Readable;
}

/** A stream as fetch takes it: sent as it is read (chunked), which needs `duplex: 'half'`. */
function streamBody(body: Readable): RequestInit {
  // note: fetch cancels the web stream when it gives up, which destroys the Readable: the file is closed.
  return { body: Readable.toWeb(body), duplex: 'half' };
}

function baseOf(baseUrl: string): URL {
  const url = new URL(baseUrl);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** A reply read up to the reply limit, as JSON when it is. */
async function readReply(res: Response, transport: TransportOptions, sentAt: number, abandon: () => void): Promise<AttemptResult> {
  const text = await readAtMost(res, transport.maxReplyBytes ?? MAX_REPLY_BYTES, abandon);
  if (text === undefined) return { type: 'response', status: res.status, body: undefined, headers: res.headers, sentAt, tooLarge: true };
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    // note: a proxy's HTML error page; the status decides what happens next.
  }
  return { type: 'response', status: res.status, body: parsed, headers: res.headers, sentAt, tooLarge: false };
}

/** One HTTP attempt with the key and User-Agent; never throws (AttemptResult). */
export async function sendAttempt(transport: TransportOptions, request: AttemptRequest): Promise<AttemptResult> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${transport.apiKey}`,
    'user-agent': transport.userAgent,
    ...request.headers,
  };
  const { body } = request;
  const sentAt = Date.now();
  const abandon = new AbortController();
  try {
    const res = await (transport.fetch ?? fetch)(new URL(request.path, baseOf(transport.baseUrl)), {
      method: request.method,
      headers,
      ...(body === undefined ? {} : typeof body === 'string' ? { body } : streamBody(body)),
      // note: a redirect is answered, never followed: following it would send the key and the
      // rows to wherever the Location points, and count that server's 201 as an import.
      redirect: 'manual',
      // note: the timeout covers reading the body too, so a reply that trickles in is bounded.
      signal: AbortSignal.any([abandon.signal, AbortSignal.timeout(transport.timeoutMs)]),
    });
    return await readReply(res, transport, sentAt, () => abandon.abort());
  } catch (error) {
    return { type: 'network', ...describeNetworkFailure(error) };
  }
}

/**
 * One GET whose 200 is a stream read by the caller (an export): its body handed over unread, the
 * timeout covering only the wait for its headers, so that a long answer is not cut at
 * `timeoutMs` (the reader bounds each wait for more, readStreamLines). Any other status is read as
 * sendAttempt reads it. Never throws.
 */
export async function sendStreamAttempt(transport: TransportOptions, request: Omit<AttemptRequest, 'body'> & { method: 'GET' }): Promise<AttemptResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${transport.apiKey}`, 'user-agent': transport.userAgent, ...request.headers };
  const sentAt = Date.now();
  const abandon = new AbortController();
  const timer = setTimeout(() => abandon.abort(new Error(`no answer within ${transport.timeoutMs} ms`)), transport.timeoutMs);
  try {
    const res = await (transport.fetch ?? fetch)(new URL(request.path, baseOf(transport.baseUrl)), { method: 'GET', headers, redirect: 'manual', signal: abandon.signal });
    if (res.status === 200 && res.body !== null) {
      clearTimeout(timer);
      return { type: 'response', status: 200, body: undefined, headers: res.headers, sentAt, tooLarge: false, stream: res.body };
    }
    return await readReply(res, transport, sentAt, () => abandon.abort());
  } catch (error) {
    return { type: 'network', ...describeNetworkFailure(error) };
  } finally {
    clearTimeout(timer);
  }
}
