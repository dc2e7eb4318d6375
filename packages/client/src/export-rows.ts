import type { StoredRows } from './api-types.js';
import type { RowKind } from './attempt-client.js';
import type { ClientCore } from './client-core.js';
import { ApiError } from './errors/api-error.js';
import { NetworkError } from './errors/network-error.js';
import { ReplyError } from './errors/reply-error.js';
import { readStreamLines } from './read-stream-lines.js';
import { sendWithRetries } from './send-with-retries.js';

export interface ExportRowsOptions {
  /** the archived rows instead of the active ones */
  archived?: boolean;
  /** only rows created, changed, archived or restored at or after this ISO 8601 time */
  updatedSince?: string;
  /** the longest wait for more of the answer once it started (default the client's `timeoutMs`) */
  idleMs?: number;
}

/** The longest line read: a stored row is at most 1 MiB; twice that leaves room for JSON's escapes. */
const MAX_LINE_CHARS = 2 * 2 ** 20;

/**
 * GET /v1/api/{kind}/export: every row of the account, as stored, in id order, one snapshot,
 * yielded as its NDJSON arrives (a line held at a time, never the whole body). The request is
 * retried as every read is (429 `too_many_exports` included, as its `Retry-After` asks); once rows
 * came, an answer cut short is a NetworkError (outcome unknown: nothing is written, start again),
 * never a short catalogue taken for a whole one.
 */
export async function* exportRows<K extends RowKind>(core: ClientCore, kind: K, options: ExportRowsOptions = {}, timeoutMs = 120_000): AsyncGenerator<StoredRows[K], void, undefined> {
  const what = `GET /v1/api/${kind}/export`;
  const query = new URLSearchParams({ ...(options.archived === true ? { archived: 'true' } : {}), ...(options.updatedSince === undefined ? {} : { updated_since: options.updatedSince }) });
  const reply = await sendWithRetries(() => core.attempts.getExport(kind, query.toString()), core.retry, { idempotent: true, expected: [200], pacer: core.pacer });
  if (reply.status !== 200) throw new ApiError(reply.status, reply.body, reply.headers, what);
  if (reply.stream === undefined) throw new ReplyError(200, `${what}: the 200 has no body`);
  const lines = readStreamLines(
    reply.stream,
    { maxLineBytes: MAX_LINE_CHARS, idleMs: options.idleMs ?? timeoutMs },
    {
      tooLong: () => new ReplyError(200, `${what}: a line is longer than any row`),
      cut: (cause) => new NetworkError(`${what}: the answer was cut short (${cause instanceof Error ? cause.message : String(cause)})`, true, 1),
    },
  );
  for await (const line of lines) {
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new ReplyError(200, `${what}: a line is not JSON`);
    }
    if (typeof row !== 'object' || row === null || typeof (row as { id?: unknown }).id !== 'string') throw new ReplyError(200, `${what}: a line is not a row`);
    yield row as StoredRows[K];
  }
}
