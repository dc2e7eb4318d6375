import { describe, expect, it } from 'vitest';
import { problemsOf } from '../support/compile-as-partner.js';

const CLIENT = `import { createClient, type MergeRowInputs } from '@bulk-import/client';
const client = createClient({ baseUrl: 'https://api.example.com', apiKey: 'svc_live_x' });
`;

/**
 * A merge's rows are typed by the document's merge row schemas (ListingMergeInput,
 * MachineMergeInput), so a partner's merge compiles without a cast, and what the service would
 * refuse as a merge row does not compile. Compiled as a partner's strictest project would,
 * against the built package; each refusal is a line the compiler must find an error on
 * (`@ts-expect-error`, which is itself an error when the line compiles).
 */
describe('the client types a merge\'s rows', () => {
  it('takes an external_id and the fields to change (null clears an optional one) for both kinds, and refuses what the service would', () => {
    const { problems } = problemsOf(`${CLIENT}
const merged = await client.importRows('listings', [{ external_id: 'SKU-1', price_cents: 1_999 }, { external_id: 'SKU-2', color: null, tags: null }], { update: 'merge' });
const id: string = merged.body.import_id;
const dry = await client.importRows('machines', [{ external_id: 'M-1', nickname: 'Bay 2', is_skill_station: null }], { update: 'merge', dryRun: true });
const dryRun: true = dry.body.dry_run;
const row: MergeRowInputs['machines'] = { external_id: 'M-2', model_number: null };
await client.importRows('machines', [row], { update: 'merge', idempotencyKey: 'nightly-2026-11-27' });
export { id, dryRun };

// @ts-expect-error a merge row names its row by external_id
await client.importRows('listings', [{ price_cents: 1_999 }], { update: 'merge' });
// @ts-expect-error a required field cannot be cleared
await client.importRows('listings', [{ external_id: 'SKU-1', title: null }], { update: 'merge' });
// @ts-expect-error a price is a whole number of cents
await client.importRows('listings', [{ external_id: 'SKU-1', price_cents: '19.99' }], { update: 'merge' });
// @ts-expect-error a field of the other kind
await client.importRows('machines', [{ external_id: 'M-1', price_cents: 1_999 }], { update: 'merge' });
// @ts-expect-error without update: 'merge', a row is a whole one
await client.importRows('listings', [{ external_id: 'SKU-1', price_cents: 1_999 }]);
`);
    expect(problems).toEqual([]);
  });

  it('would say so if a refused line compiled (the check above can fail)', () => {
    const { problems } = problemsOf(`${CLIENT}
// @ts-expect-error
await client.importRows('listings', [{ external_id: 'SKU-1', price_cents: 1_999 }], { update: 'merge' });
`);
    expect(problems).toEqual([expect.stringMatching(/Unused '@ts-expect-error' directive/)]);
  });
});
