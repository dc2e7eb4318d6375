import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { newPartner, storedFor } from '../support/bulk-endpoint.js';

/** Query strings a client might send: the parameter spelt right or wrong, once or twice, encoded or not. */
const valueArb = fc.oneof(
  fc.constantFrom('true', 'false', 'TRUE', 'True', '1', '0', 'yes', '', ' true', 'true ', '%74rue', 'true%00', 'false&dry_run=true', 'true&dry_run=false', 'null', '[]', '%'),
  fc.string({ maxLength: 8 }).map(encodeURIComponent),
  fc.string({ maxLength: 8 }),
);
const queryArb = fc.oneof(
  valueArb.map((value) => `dry_run=${value}`),
  fc.constant('dry_run'),
  valueArb.map((value) => `other=1&dry_run=${value}`),
);

/**
 * Any `dry_run` spelling: exactly `true` is a dry run (200, nothing written), exactly `false` or
 * no parameter an import (201), and everything else a clean 400; never a 5xx, never an import
 * written by a request that asked for something else.
 */
describe.each(['listings', 'machines'] as const)('?dry_run on the %s endpoint', (kind) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers 200 for true, 201 for false, and a 400 for anything else, without a 5xx', async () => {
    let partner = await newPartner(service);
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(queryArb, fc.boolean(), async (query, withId) => {
        if (++sent % 200 === 0) partner = await newPartner(service); // an enterprise account allows 300 a minute
        const before = await storedFor(service, partner.account);
        const row = kind === 'listings' ? validListing(withId ? { external_id: `P-${sent}` } : {}) : validMachine(withId ? { external_id: `P-${sent}` } : {});
        const url = `/v1/api/${kind}/bulk?${query}`;
        const res = await service.request({ method: 'POST', url, headers: bearer(partner.key), payload: { [kind]: [row] } });
        // note: the values as a URL parser reads them (it drops trailing spaces and a fragment)
        const values = new URL(url, 'http://localhost').searchParams.getAll('dry_run');
        const after = await storedFor(service, partner.account);
        if (values.length === 1 && values[0] === 'true') {
          expect(res.statusCode, query).toBe(200);
          expect(res.json()).toMatchObject({ inserted: 1, dry_run: true });
          expect(after).toEqual(before);
        } else if (values.length === 0 || (values.length === 1 && values[0] === 'false')) {
          expect(res.statusCode, query).toBe(201);
          expect(after[kind]).toBe(before[kind] + 1);
        } else {
          expect(res.statusCode, query).toBe(400);
          expect(res.json()).toEqual({ error: 'dry_run must be true or false' });
          expect(after).toEqual(before);
        }
      }),
      { numRuns: 150 },
    );
  });
});
