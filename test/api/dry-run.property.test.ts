import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_CHARACTERS } from '../../src/shared/rows/control-characters.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { newPartner, storedFor } from '../support/bulk-endpoint.js';

/** Values a client might send: spelt right or wrong, encoded or not. */
const valueArb = fc.oneof(
  fc.constantFrom('true', 'false', 'TRUE', 'True', '1', '0', 'yes', '', ' true', 'true ', '%74rue', 'true%00', 'null', '[]', '%'),
  fc.string({ maxLength: 8 }).map(encodeURIComponent),
  fc.string({ maxLength: 8 }),
);
/** Names a client might send: `dry_run` and its misspellings, encoded or not, and anything else. */
const nameArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant('dry_run') },
  { weight: 3, arbitrary: fc.constantFrom('dryRun', 'dry-run', 'dryrun', 'DRY_RUN', 'Dry_Run', 'dry_run ', 'dry_run%20', 'dry%5Frun', 'dry_run%00', 'dry+run', 'dry_run[]', 'dry_run.', '0', '10', '__proto__', 'constructor', '', '%', '%1B%5B2J') },
  { weight: 2, arbitrary: fc.string({ maxLength: 8 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.string({ maxLength: 80 }) },
);
/** One to four parameters, each `name=value`, or a bare `name`. */
const queryArb = fc
  .array(fc.tuple(nameArb, fc.option(valueArb, { nil: undefined })), { minLength: 1, maxLength: 4 })
  .map((pairs) => pairs.map(([name, value]) => (value === undefined ? name : `${name}=${value}`)).join('&'));

const UNKNOWN = 'Unknown query parameter: ';

/**
 * Any query string: exactly `dry_run=true` is a dry run (200, nothing written), exactly
 * `dry_run=false` or no parameter an import (201), and everything else a clean 400; a parameter
 * other than `dry_run` is always the 400 `Unknown query parameter: <name>` and never an import,
 * whatever `dry_run` says beside it. Never a 5xx.
 */
describe.each(['listings', 'machines'] as const)('the query string on the %s endpoint', (kind) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers 200 for dry_run=true, 201 for dry_run=false or nothing, a 400 for anything else, and never imports beside another parameter', async () => {
    let partner = await newPartner(service);
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(queryArb, fc.boolean(), async (query, withId) => {
        if (++sent % 200 === 0) partner = await newPartner(service); // an enterprise account allows 300 a minute
        const before = await storedFor(service, partner.account);
        const row = kind === 'listings' ? validListing(withId ? { external_id: `P-${sent}` } : {}) : validMachine(withId ? { external_id: `P-${sent}` } : {});
        const url = `/v1/api/${kind}/bulk?${query}`;
        const res = await service.request({ method: 'POST', url, headers: bearer(partner.key), payload: { [kind]: [row] } });
        // note: the parameters as a URL parser reads them (it drops trailing spaces and a fragment),
        // in the order sent.
        const params = [...new URL(url, 'http://localhost').searchParams];
        const unknown = params.find(([name]) => name !== 'dry_run');
        const values = params.filter(([name]) => name === 'dry_run').map(([, value]) => value);
        const after = await storedFor(service, partner.account);
        if (unknown !== undefined) {
          expect(res.statusCode, query).toBe(400);
          const { error } = res.json<{ error: string }>();
          expect(error.startsWith(UNKNOWN), query).toBe(true);
          const shown = error.slice(UNKNOWN.length);
          expect(CONTROL_CHARACTERS.test(shown), query).toBe(false);
          expect([...shown].length, query).toBeLessThanOrEqual(65);
          // note: a name with a malformed percent-escape is shown as sent, where a URL parser
          // reads a replacement character; any other printable name is shown exactly.
          const [name] = unknown;
          if (/^[\x20-\x7e]{1,64}$/.test(name) && !/%/.test(query)) expect(shown, query).toBe(name);
          expect(after, query).toEqual(before);
        } else if (values.length === 1 && values[0] === 'true') {
          expect(res.statusCode, query).toBe(200);
          expect(res.json()).toMatchObject({ inserted: 1, dry_run: true });
          expect(after).toEqual(before);
        } else if (values.length === 0 || (values.length === 1 && values[0] === 'false')) {
          expect(res.statusCode, query).toBe(201);
          expect(after[kind]).toBe(before[kind] + 1);
        } else {
          expect(res.statusCode, query).toBe(400);
          expect(res.json()).toEqual({ error: 'dry_run must be true or false', code: 'invalid_dry_run' });
          expect(after).toEqual(before);
        }
      }),
      { numRuns: 150 },
    );
  });
});
