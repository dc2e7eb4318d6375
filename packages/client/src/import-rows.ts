import { randomUUID } from 'node:crypto';
import type { BulkDryRunResult, BulkResult, MergeRowInputs, RowInputs, RowsAnswer } from './api-types.js';
import type { RowKind } from './attempt-client.js';
import { expectAnswer, type ClientCore } from './client-core.js';
import type { UpdateMode } from './file-import-query.js';

export interface ImportRowsOptions {
  /** a server dry run (`?dry_run=true`): everything an import does, then rolled back */
  dryRun?: boolean;
  /** `merge`: each row changes only the fields it carries */
  update?: UpdateMode;
  /** the key of this logical import; default a fresh UUID. Give your own to retry across processes. */
  idempotencyKey?: string;
  /**
   * `true`: the answer's `body.rows` names each valid row's `id` and `outcome`, in request order
   * (`?return=rows`); a replay with the same key answers the same. Its body is typed with `rows`
   * exactly when this is `true`.
   */
  returnRows?: boolean;
}

/** An import of whole rows (`update` `replace`, the server's default). */
export type ReplaceRowsOptions = ImportRowsOptions & { update?: 'replace' };
/** A merge (`update=merge`): its rows are MergeRowInputs, each changing only the fields it carries. */
export type MergeRowsOptions = ImportRowsOptions & { update: 'merge' };

/** An import's 201: its body (with `rows` when asked: RowsAnswer), where the import is (`Location`), and whether it was replayed. */
export interface RowsImported<Body = RowsAnswer<BulkResult, false>> {
  dryRun: false;
  body: Body;
  /** the import resource (GET it, or watchImport) */
  location: string;
  /** `Idempotent-Replayed: true`: the recorded answer of an earlier request with this key; nothing was written this time */
  replayed: boolean;
  /** the key sent on every attempt: send the same rows again with it to be answered the same */
  idempotencyKey: string;
}

/** A dry run's 200: what the import would have done. */
export interface RowsDryRun<Body = RowsAnswer<BulkDryRunResult, false>> {
  dryRun: true;
  body: Body;
}

/**
 * POST /v1/api/{kind}/bulk. note: one Idempotency-Key per logical import, made before the first
 * attempt and reused on every retry, so a retry after a lost answer is answered with the first
 * one's result instead of inserting again; a dry run carries none (the server refuses a key on
 * one: it writes nothing to deduplicate).
 */
export async function importRows<K extends RowKind>(
  core: ClientCore,
  kind: K,
  rows: readonly (RowInputs[K] | MergeRowInputs[K])[],
  options: ImportRowsOptions = {},
): Promise<RowsImported<BulkResult> | RowsDryRun<BulkDryRunResult>> {
  const body = JSON.stringify({ [kind]: rows });
  const what = `POST /v1/api/${kind}/bulk`;
  const returnRows = options.returnRows === true;
  if (options.dryRun === true) {
    const answer = await expectAnswer<BulkDryRunResult>(core, () => core.attempts.postBulk(kind, body, undefined, true, options.update, returnRows), { idempotent: true }, [200], what);
    return { dryRun: true, body: answer.body };
  }
  const key = options.idempotencyKey ?? randomUUID();
  const answer = await expectAnswer<BulkResult>(core, () => core.attempts.postBulk(kind, body, key, false, options.update, returnRows), { idempotent: true }, [201], what);
  return {
    dryRun: false,
    body: answer.body,
    location: answer.headers.get('location') ?? `/v1/api/imports/${encodeURIComponent(answer.body.import_id)}`,
    replayed: answer.headers.get('idempotent-replayed') === 'true',
    idempotencyKey: key,
  };
}
