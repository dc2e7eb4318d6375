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
    const text = await readAtMost(res, transport.maxReplyBytes ?? MAX_REPLY_BYTES, () => abandon.abort());
    if (text === undefined) return { type: 'response', status: res.status, body: undefined, headers: res.headers, sentAt, tooLarge: true };
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      // note: a proxy's HTML error page; the status decides what happens next.
    }
    return { type: 'response', status: res.status, body: parsed, headers: res.headers, sentAt, tooLarge: false };
  } catch (error) {
    return { type: 'network', ...describeNetworkFailure(error) };
  }
}
