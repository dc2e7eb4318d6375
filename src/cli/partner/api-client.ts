import { Readable } from 'node:stream';
import { fileImportQuery, type FileImportOptions, type UpdateMode } from './import-options.js';
/**
 * The most of a reply the CLI reads. note: the largest real reply is a 201 for a full batch of
 * which every row failed on every field: 500 machines, each with a problem in each of its fields
 * and in each of its 100 capabilities (every problem in the reason and again in details) and an
 * external_id of 100 escaped characters, is about 15 KB a row, 7.5 MB in all (200 such listings,
 * each with 100 bad photo URLs, about 17 KB a row, make 3.5 MB). The CLI sends only rows its copy
 * of the server's rules accepts, so a real reply is far smaller still; 16 MiB leaves room for a
 * newer server's longer messages. Anything larger is abandoned unread: buffering whatever a
 * server sends has no bound at all.
 */
export const MAX_REPLY_BYTES = 16 * 2 ** 20;

/** What one HTTP attempt came back with. */
export type AttemptResult =
  /** `tooLarge`: the body passed MAX_REPLY_BYTES and was abandoned unread (`body` is undefined) */
  | { type: 'response'; status: number; body: unknown; headers: Headers; sentAt: number; tooLarge: boolean }
  /**
   * No HTTP reply. `delivered: false` when the connection was never made (refused, DNS), so
   * the server cannot have seen the request; otherwise it may have, and the outcome is unknown.
   */
  | { type: 'network'; delivered: boolean; message: string };

// note: errors raised before any byte could reach the server; anything else may come after.
const NOT_DELIVERED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function describeNetworkError(error: unknown): { delivered: boolean; message: string } {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { delivered: true, message: 'no reply before the request timeout' };
  }
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const code = cause?.code;
  const message = [error instanceof Error ? error.message : String(error), cause?.message ?? code].filter(Boolean).join(': ');
  return { delivered: code === undefined || !NOT_DELIVERED_CODES.has(code), message };
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /** per request, in milliseconds */
  timeoutMs: number;
  userAgent: string;
  /** the largest reply read (default MAX_REPLY_BYTES) */
  maxReplyBytes?: number;
}

/**
 * The body as text, read as it arrives; undefined once it passes `maxBytes`, by its
 * Content-Length or by the bytes counted, with the connection closed (`abandon`) so that the
 * rest is neither buffered nor waited for.
 */
async function readAtMost(res: Response, maxBytes: number, abandon: () => void): Promise<string | undefined> {
  const announced = Number(res.headers.get('content-length') ?? 0);
  const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = res.body?.getReader();
  if (reader === undefined) return '';
  if (announced > maxBytes) {
    abandon();
    await reader.cancel().catch(() => undefined);
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      abandon();
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  // note: TextDecoder drops a UTF-8 BOM, as Response.text() does.
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}

/** A stream as fetch takes it: sent as it is read (chunked), which needs `duplex: 'half'`. */
function streamBody(body: Readable): RequestInit {
  // note: fetch cancels the web stream when it gives up, which destroys the Readable: the file is closed.
  return { body: Readable.toWeb(body), duplex: 'half' };
}

/** The endpoints of the API the CLI uses, one attempt per call; never throws. */
export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  /**
   * One attempt; `dryRun` sends it as a server dry run (`?dry_run=true`), which writes nothing;
   * `update` `merge` as a merge (`update=merge`, docs/catalogue.md#merge).
   */
  async postBulk(kind: string, body: string, idempotencyKey: string | undefined, dryRun = false, update: UpdateMode = 'replace'): Promise<AttemptResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    // note: `replace` is the server's default, left out so that a server from before merges is asked as before.
    const query = new URLSearchParams({ ...(dryRun ? { dry_run: 'true' } : {}), ...(update === 'merge' ? { update } : {}) }).toString();
    return this.attempt('POST', `v1/api/${kind}/bulk${query === '' ? '' : `?${query}`}`, headers, body);
  }

  /** One attempt at an archive or delete (POST /v1/api/{kind}/bulk-archive or bulk-delete); `dryRun` as for postBulk. */
  async postRemoval(kind: string, action: 'archive' | 'delete', body: string, idempotencyKey: string | undefined, dryRun = false): Promise<AttemptResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    return this.attempt('POST', `v1/api/${kind}/bulk-${action}${dryRun ? '?dry_run=true' : ''}`, headers, body);
  }

  /**
   * One attempt at a whole file (POST /v1/api/imports?kind=...): `body` is streamed as it is read,
   * never held whole, so each attempt needs a fresh one.
   */
  async postFile(kind: string, contentType: string, body: Readable, idempotencyKey: string | undefined, options: FileImportOptions = {}): Promise<AttemptResult> {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    return this.attempt('POST', `v1/api/imports?${fileImportQuery(kind, options)}`, headers, body);
  }

  /** One GET of `path` (relative to the base URL, e.g. `v1/api/imports/<id>`), answered in JSON. */
  async get(path: string): Promise<AttemptResult> {
    return this.attempt('GET', path, { accept: 'application/json' });
  }

  private async attempt(method: 'GET' | 'POST', path: string, extraHeaders: Record<string, string>, body?: string | Readable): Promise<AttemptResult> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      'user-agent': this.options.userAgent,
      ...extraHeaders,
    };
    const sentAt = Date.now();
    const abandon = new AbortController();
    try {
      const res = await fetch(new URL(path, this.base()), {
        method,
        headers,
        ...(body === undefined ? {} : typeof body === 'string' ? { body } : streamBody(body)),
        // note: a redirect is answered, never followed: following it would send the key and the
        // rows to wherever the Location points, and count that server's 201 as an import.
        redirect: 'manual',
        // note: the timeout covers reading the body too, so a reply that trickles in is bounded.
        signal: AbortSignal.any([abandon.signal, AbortSignal.timeout(this.options.timeoutMs)]),
      });
      const text = await readAtMost(res, this.options.maxReplyBytes ?? MAX_REPLY_BYTES, () => abandon.abort());
      if (text === undefined) return { type: 'response', status: res.status, body: undefined, headers: res.headers, sentAt, tooLarge: true };
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text) as unknown;
      } catch {
        // note: a proxy's HTML error page; the status decides what happens next.
      }
      return { type: 'response', status: res.status, body: parsed, headers: res.headers, sentAt, tooLarge: false };
    } catch (error) {
      return { type: 'network', ...describeNetworkError(error) };
    }
  }

  private base(): URL {
    const url = new URL(this.options.baseUrl);
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    return url;
  }
}
