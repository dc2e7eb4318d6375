import { createHash, type Hash } from 'node:crypto';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { MirrorRemoval } from '../../shared/repositories/mirror-removal.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';

/**
 * What an Idempotency-Key compares (docs/endpoints.md#idempotency-key): the request's operation
 * and its body's bytes, as one SHA-256. The same body sent to another operation (another kind,
 * a merge rather than a replace, an archive rather than a delete, a file as a mirror) is another
 * request, refused 422 under a key already used.
 */
export type HashedRequest =
  | { route: 'bulk'; kind: ImportKind; update: UpdateMode; returnRows?: boolean }
  | { route: 'bulk-archive' | 'bulk-delete'; kind: ImportKind; returnRows?: boolean }
  | { route: 'file'; kind: ImportKind; update: UpdateMode; mirror: MirrorRemoval | undefined };

/**
 * The operation as the hash begins with it. note: these texts are stored inside every claimed
 * key's hash (idempotency_keys.request_hash): a key claimed before a release must still match
 * its repeat after it, so a text, once released, never changes.
 */
function requestTag(request: HashedRequest): string {
  switch (request.route) {
    case 'bulk':
      return `${isMerge(request.update) ? `${request.kind}?update=merge` : request.kind}${returnTag(request)}`;
    case 'bulk-archive':
    case 'bulk-delete':
      return `${request.kind}/${request.route}${returnTag(request)}`;
    case 'file':
      return `file:${request.kind}${isMerge(request.update) ? '?update=merge' : ''}${request.mirror === undefined ? '' : `&mirror=${JSON.stringify(request.mirror)}`}`;
  }
}

/**
 * `?return=rows` makes another request: its replay must answer `rows`, which an import recorded
 * without them cannot (docs/catalogue.md#rows-and-their-ids). note: nothing without it, so that
 * the hashes of every other request stay what they were.
 */
function returnTag(request: { returnRows?: boolean }): string {
  return request.returnRows === true ? '&return=rows' : '';
}

/** A hash begun with the request's operation, for a body that arrives in pieces (a file). */
export function startRequestHash(request: HashedRequest): Hash {
  return createHash('sha256').update(`${requestTag(request)}\n`);
}

/** The hash of a request whose body is at hand. */
export function requestHash(request: HashedRequest, body: Uint8Array): Buffer {
  return startRequestHash(request).update(body).digest();
}
