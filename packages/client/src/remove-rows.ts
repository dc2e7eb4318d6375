import { randomUUID } from 'node:crypto';
import type { RemovalRequest } from './api-types.js';
import type { RemovalAction, RowKind } from './attempt-client.js';
import { expectAnswer, type ClientCore } from './client-core.js';

export interface RemoveRowsOptions {
  /** a server dry run: what would be archived or deleted; nothing changes */
  dryRun?: boolean;
  /** default a fresh UUID, reused on every retry */
  idempotencyKey?: string;
  /** `true`: `body.rows` names each entry's row and outcome (`?return=rows`), as for importRows */
  returnRows?: boolean;
}

/** An archive's or delete's 200, with its `Location` (absent on a dry run) and replay. */
export interface RowsRemoved<Result> {
  body: Result;
  location: string | undefined;
  replayed: boolean;
  idempotencyKey: string | undefined;
}

/**
 * POST /v1/api/{kind}/bulk-archive or bulk-delete, with the rows named by your `external_ids`
 * or our `ids`; the key as for importRows.
 */
export async function removeRows<Result>(core: ClientCore, kind: RowKind, action: RemovalAction, request: RemovalRequest, options: RemoveRowsOptions = {}): Promise<RowsRemoved<Result>> {
  const dryRun = options.dryRun === true;
  const key = dryRun ? undefined : (options.idempotencyKey ?? randomUUID());
  const body = JSON.stringify(request);
  const returnRows = options.returnRows === true;
  const answer = await expectAnswer<Result>(core, () => core.attempts.postRemoval(kind, action, body, key, dryRun, returnRows), { idempotent: true }, [200], `POST /v1/api/${kind}/bulk-${action}`);
  return { body: answer.body, location: answer.headers.get('location') ?? undefined, replayed: answer.headers.get('idempotent-replayed') === 'true', idempotencyKey: key };
}
