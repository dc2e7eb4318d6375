import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * Whether a bulk request asks for a dry run (docs/endpoints.md#dry-run): `?dry_run=true` or
 * `false`, once; anything else is a 400, never a silent real import. A dry run with an
 * Idempotency-Key is refused: nothing it does is recorded, so nothing could be replayed.
 */
export function parseDryRun(query: unknown, idempotencyKey: string | string[] | undefined): boolean {
  const value = typeof query === 'object' && query !== null ? (query as Record<string, unknown>)['dry_run'] : undefined;
  if (value === undefined || value === 'false') return false;
  if (value !== 'true') throw apiErrors.dryRunMalformed();
  if (idempotencyKey !== undefined) throw apiErrors.dryRunWithIdempotencyKey();
  return true;
}
