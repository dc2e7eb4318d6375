import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createClient, type RowInputs, type RowOutcome } from '@bulk-import/client';
import { newPartner } from '../support/bulk-endpoint.js';
import { validListing } from '../support/fixtures.js';
import { startCliService, type CliService } from '../support/cli-service.js';

const listing = (externalId: string): RowInputs['listings'] => validListing({ external_id: externalId });

/**
 * `returnRows: true` on the package's importRows, archiveRows and deleteRows (docs/catalogue.md#rows-and-their-ids):
 * the answer's `body.rows`, typed as present exactly when asked. note: the type checks run with
 * the suite's typecheck (`@ts-expect-error` fails it where `rows` becomes reachable unasked).
 */
describe('@bulk-import/client with returnRows', () => {
  let cli: CliService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-return-rows-');
  });
  afterAll(async () => {
    await cli?.close();
  });

  async function client() {
    const { key } = await newPartner(cli.service);
    return createClient({ baseUrl: cli.baseUrl, apiKey: key, retry: { sleep: async () => {} } });
  }

  it('types body.rows on an import, a merge and a dry run asked with returnRows: true, and answers them', async () => {
    const partner = await client();
    const rows = [listing('C-1'), listing('C-2')];
    const imported = await partner.importRows('listings', rows, { returnRows: true });
    expectTypeOf(imported.body.rows).toEqualTypeOf<RowOutcome[]>();
    expect(imported.body.rows.map((row) => [row.index, row.external_id, row.outcome])).toEqual([[0, 'C-1', 'inserted'], [1, 'C-2', 'inserted']]);
    expect(imported.body.rows.every((row) => typeof row.id === 'string')).toBe(true);

    const merged = await partner.importRows('listings', [{ external_id: 'C-1', title: 'Merged' }], { update: 'merge', returnRows: true });
    expect(merged.body.rows).toEqual([{ index: 0, id: imported.body.rows[0]!.id, external_id: 'C-1', outcome: 'updated' }]);

    const dryRun = await partner.importRows('listings', [listing('C-3')], { dryRun: true, returnRows: true });
    expectTypeOf(dryRun.body.rows).toEqualTypeOf<RowOutcome[]>();
    expect(dryRun.body.rows).toEqual([{ index: 0, id: null, external_id: 'C-3', outcome: 'inserted' }]);

    const replay = await partner.importRows('listings', rows, { returnRows: true, idempotencyKey: imported.idempotencyKey });
    expect(replay.replayed).toBe(true);
    expect(replay.body.rows).toEqual(imported.body.rows);
  });

  it('types no rows on an import that did not ask, and the server sends none', async () => {
    const partner = await client();
    const imported = await partner.importRows('listings', [listing('P-1')]);
    // @ts-expect-error: not asked, so not there
    expect(imported.body.rows).toBeUndefined();
    const asked = await partner.importRows('listings', [listing('P-2')], { returnRows: false });
    // @ts-expect-error: returnRows false asks for none
    expect(asked.body.rows).toBeUndefined();
  });

  it('types body.rows on an archive and a delete asked with returnRows: true', async () => {
    const partner = await client();
    const imported = await partner.importRows('listings', [listing('A-1'), listing('A-2')], { returnRows: true });
    const archived = await partner.archiveRows('listings', { external_ids: ['A-1'] }, { returnRows: true });
    expectTypeOf(archived.body.rows).toEqualTypeOf<RowOutcome[]>();
    expect(archived.body.rows).toEqual([{ index: 0, id: imported.body.rows[0]!.id, external_id: 'A-1', outcome: 'archived' }]);
    const deleted = await partner.deleteRows('listings', { ids: [imported.body.rows[1]!.id!] }, { returnRows: true });
    expect(deleted.body.rows).toEqual([{ index: 0, id: imported.body.rows[1]!.id, external_id: 'A-2', outcome: 'deleted' }]);
    const plain = await partner.deleteRows('listings', { external_ids: ['A-1'] });
    // @ts-expect-error: not asked
    expect(plain.body.rows).toBeUndefined();
  });
});
