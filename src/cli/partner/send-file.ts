import { randomUUID } from 'node:crypto';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptClient } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import { uploadWords } from './call-words.js';
import type { FileBody } from './file-body.js';
import type { FileImportOptions } from './import-options.js';
import { believedImport, type Import } from './import-resource.js';
import { refusalOf } from './reply-refusals.js';
import { sendWithPolicy, stopError } from './send-with-policy.js';

/** What a whole file's upload came to: the import it became, or a refusal that kept nothing. */
export type FileOutcome =
  | { type: 'accepted'; import: Import; replayed: boolean }
  /** a 4xx other than 429 (400, 413, 415, 422): nothing was kept; `rowErrors` the first failed rows of `no valid rows` */
  | { type: 'refused'; reason: string; rowErrors?: RowError[] };

/** Everything the upload goes through: the API context, with a client that can send a file. */
export type FileSendContext = ApiContext & { client: Pick<AttemptClient, 'postFile' | 'get'> };

/**
 * Sends a whole file (POST /v1/api/imports?kind=...) until it has an answer, with a batch's retry
 * rules (send-with-policy.ts): one Idempotency-Key for the file, reused on every retry, so a retry
 * after a lost reply is answered with the import the first attempt made. Each attempt reads the
 * file again from its start (`body.open()`), with the same `options` (update, mirror) in its
 * query: the server compares them with the key's first request.
 * - 202: the import, whose shape is checked.
 * - 429 (`Too many file imports in progress`, a quota): wait `Retry-After`, then again; not an attempt.
 * - 503 or a connection never made: nothing was kept; retried with backoff.
 * - other 5xx, a dropped connection, a timeout: unknown; retried with the same key, or, without
 *   idempotency, fatal with the outcome unknown.
 * - 401/402/403, a redirect, out of attempts or of --max-retry-time: fatal.
 * - other 4xx: refused as a whole, nothing kept.
 */
export async function sendFile(ctx: FileSendContext, kind: string, body: FileBody, options: FileImportOptions = {}): Promise<FileOutcome> {
  const idempotent = ctx.policy.idempotency;
  const key = idempotent ? randomUUID() : undefined;
  const words = uploadWords(ctx.policy);
  const send = () => ctx.client.postFile(kind, body.contentType, body.open(), key, options);
  const outcome = await sendWithPolicy(ctx, send, { idempotent, expected: [202], maxRetryTimeMs: ctx.policy.maxRetryTimeMs }, words);
  if (outcome.type === 'found') return outcome.found;
  const state = outcome.mayHaveWritten ? 'unknown' : 'not-written';
  if (outcome.type === 'stopped') throw stopError(outcome, state, words);
  const { reply } = outcome;
  if (reply.status !== 202) return { type: 'refused', ...refusalOf(reply, state) };
  const found = typeof reply.body === 'object' && reply.body !== null ? (reply.body as { import?: unknown }).import : undefined;
  return { type: 'accepted', import: believedImport(found, "the file's import"), replayed: reply.headers.get('idempotent-replayed') === 'true' };
}
