import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { requestHash, startRequestHash, type HashedRequest } from '../../../src/api/import/request-hash.js';

const body = Buffer.from('{"listings":[{"title":"Lamp"}]}');
const sha256 = (text: string) => createHash('sha256').update(text).update(body).digest();

describe('requestHash: what an Idempotency-Key compares', () => {
  // note: the texts are inside the hashes of keys claimed before any release: pinned here, so
  // that a change of them (which would refuse a repeat across a deploy with 422) fails a test.
  it.each<[HashedRequest, string]>([
    [{ route: 'bulk', kind: 'listings', update: 'replace' }, 'listings\n'],
    [{ route: 'bulk', kind: 'machines', update: 'merge' }, 'machines?update=merge\n'],
    [{ route: 'bulk-archive', kind: 'listings' }, 'listings/bulk-archive\n'],
    [{ route: 'bulk-delete', kind: 'machines' }, 'machines/bulk-delete\n'],
    [{ route: 'file', kind: 'listings', update: 'replace', mirror: undefined }, 'file:listings\n'],
    [{ route: 'file', kind: 'listings', update: 'merge', mirror: { missing: 'delete', maxPercent: 5 } }, 'file:listings?update=merge&mirror={"missing":"delete","maxPercent":5}\n'],
  ])('hashes %j as the text %j before the body, whether the body comes whole or in pieces', (request, text) => {
    expect(requestHash(request, body)).toEqual(sha256(text));
    expect(startRequestHash(request).update(body.subarray(0, 5)).update(body.subarray(5)).digest()).toEqual(sha256(text));
  });

  it('tells every operation apart for the same body', () => {
    const requests: HashedRequest[] = [
      { route: 'bulk', kind: 'listings', update: 'replace' },
      { route: 'bulk', kind: 'listings', update: 'merge' },
      { route: 'bulk-archive', kind: 'listings' },
      { route: 'bulk-delete', kind: 'listings' },
      { route: 'file', kind: 'listings', update: 'replace', mirror: undefined },
      { route: 'file', kind: 'listings', update: 'replace', mirror: { missing: 'archive', maxPercent: 10 } },
    ];
    expect(new Set(requests.map((request) => requestHash(request, body).toString('hex'))).size).toBe(requests.length);
  });
});
