import type { Account, Import } from './api-types.js';
import { expectAnswer, type ClientCore } from './client-core.js';

/** The import's path, relative to the base URL. */
export const importPath = (id: string) => `v1/api/imports/${encodeURIComponent(id)}`;

/** GET /v1/api/me: the account and the key in use. */
export async function me(core: ClientCore): Promise<Account> {
  return (await expectAnswer<Account>(core, () => core.attempts.get('v1/api/me'), { idempotent: true }, [200], 'GET /v1/api/me')).body;
}

/** GET /v1/api/imports/{id}; ApiError 404 when it is not an import of the account. `deadline`: no retry waits past it. */
export async function getImport(core: ClientCore, id: string, deadline?: number): Promise<Import> {
  const rules = deadline === undefined ? { idempotent: true } : { idempotent: true, deadline };
  return (await expectAnswer<Import>(core, () => core.attempts.get(importPath(id)), rules, [200], 'GET /v1/api/imports/{id}')).body;
}

/**
 * POST /v1/api/imports/{id}/cancel: a file import stops after the batch in hand; what it wrote
 * stays. Answers the import. note: cancelling twice is answered alike, so a retry is safe.
 */
export async function cancelImport(core: ClientCore, id: string): Promise<Import> {
  return (await expectAnswer<Import>(core, () => core.attempts.postJson(`${importPath(id)}/cancel`, undefined), { idempotent: true }, [200], 'POST /v1/api/imports/{id}/cancel')).body;
}
