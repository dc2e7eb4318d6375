import type { Readable } from 'node:stream';
import type { AttemptResult } from './attempt-result.js';
import { fileImportQuery, type FileImportOptions, type UpdateMode } from './file-import-query.js';
import { sendAttempt, sendStreamAttempt, type TransportOptions } from './send-attempt.js';

/** The kinds of rows the API imports. */
export type RowKind = 'listings' | 'machines';
/** What an archive or delete does to the rows it names. */
export type RemovalAction = 'archive' | 'delete';

/**
 * The endpoints, one attempt per call, never throwing: for a caller with retry rules of its own
 * (the partner CLI's). createClient's helpers retry on top of it.
 */
export class AttemptClient {
  constructor(private readonly transport: TransportOptions) {}

  /**
   * POST /v1/api/{kind}/bulk with `body` (`{"listings": [...]}`); `dryRun` sends `?dry_run=true`,
   * which writes nothing; `update` `merge` a merge (`update=merge`); `returnRows` asks for each
   * row's id and outcome (`return=rows`).
   */
  async postBulk(kind: string, body: string, idempotencyKey: string | undefined, dryRun = false, update: UpdateMode = 'replace', returnRows = false): Promise<AttemptResult> {
    // note: `replace` is the server's default, left out so that a server from before merges is asked as before.
    const query = bulkQuery({ ...(dryRun ? { dry_run: 'true' } : {}), ...(update === 'merge' ? { update } : {}) }, returnRows);
    return this.postJson(`v1/api/${kind}/bulk${query}`, body, idempotencyKey);
  }

  /** POST /v1/api/{kind}/bulk-archive or bulk-delete; `dryRun` and `returnRows` as for postBulk. */
  async postRemoval(kind: string, action: RemovalAction, body: string, idempotencyKey: string | undefined, dryRun = false, returnRows = false): Promise<AttemptResult> {
    return this.postJson(`v1/api/${kind}/bulk-${action}${bulkQuery(dryRun ? { dry_run: 'true' } : {}, returnRows)}`, body, idempotencyKey);
  }

  /**
   * POST /v1/api/imports?kind=...: `body` is streamed as it is read, never held whole, so each
   * attempt needs a fresh one.
   */
  async postFile(kind: string, contentType: string, body: Readable, idempotencyKey: string | undefined, options: FileImportOptions = {}): Promise<AttemptResult> {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    return sendAttempt(this.transport, { method: 'POST', path: `v1/api/imports?${fileImportQuery(kind, options)}`, headers, body });
  }

  /** One GET of `path` (relative to the base URL, e.g. `v1/api/imports/<id>`), answered in JSON. */
  async get(path: string): Promise<AttemptResult> {
    return sendAttempt(this.transport, { method: 'GET', path, headers: { accept: 'application/json' } });
  }

  /**
   * GET /v1/api/{kind}/export (`query` as sent): its 200 is `stream`, unread, gzip-compressed on
   * the wire and decompressed by fetch as it is read.
   */
  async getExport(kind: string, query: string): Promise<AttemptResult> {
    const path = `v1/api/${kind}/export${query === '' ? '' : `?${query}`}`;
    return sendStreamAttempt(this.transport, { method: 'GET', path, headers: { 'accept-encoding': 'gzip' } });
  }

  /** One POST of a JSON `body` (or none) to `path`, e.g. an import's cancel. */
  async postJson(path: string, body: string | undefined, idempotencyKey?: string): Promise<AttemptResult> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    return sendAttempt(this.transport, { method: 'POST', path, headers, ...(body === undefined ? {} : { body }) });
  }
}

/**
 * The query of a bulk call, `?...` or nothing. note: `return=rows` only when asked, so that a
 * server from before it is asked as before.
 */
function bulkQuery(parameters: Record<string, string>, returnRows: boolean): string {
  const query = new URLSearchParams({ ...parameters, ...(returnRows ? { return: 'rows' } : {}) }).toString();
  return query === '' ? '' : `?${query}`;
}
