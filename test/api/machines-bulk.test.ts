import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MACHINE_DEFAULTS, validMachine } from '../support/fixtures.js';
import { bodyOfSize as bodyOfKindOfSize, startBulkEndpoint, type StartedBulkEndpoint } from '../support/bulk-endpoint.js';
import type { TestAccount } from '../support/test-service.js';
import { rowError } from '../support/row-errors.js';

const BODY_LIMIT_BYTES = 1_048_576;
const DRAGON = '\u{1F409}'; // one code point, two UTF-16 units

/** A body of exactly `bytes` bytes. */
function bodyOfSize(bytes: number): string {
  return bodyOfKindOfSize('machines', validMachine({ template_id: `padded-${randomUUID()}` }), bytes);
}

/** What only machines do; what both bulk endpoints promise is in bulk-endpoint-contract.test.ts. */
describe('POST /v1/api/machines/bulk', () => {
  let kit: StartedBulkEndpoint;

  beforeAll(async () => {
    kit = await startBulkEndpoint('machines');
  });
  afterAll(async () => {
    await kit?.close();
  });

  async function machinesOf(account: TestAccount) {
    return kit.service.sql`
      select template_id, category, manufacturer, model, model_number, nickname, capabilities, is_skill_station,
             verification_status, account_id, import_job_id
      from machines where account_id = ${account.id} order by template_id`;
  }

  describe('success', () => {
    it('creates the valid rows of a mixed batch as pending machines of the key\'s account', async () => {
      const { account, key } = await kit.partner();
      const other = await kit.service.createAccount();
      const minimal = { template_id: 'tpl-a-minimal', category: 'fdm', manufacturer: 'Prusa Research', model: 'MK4' };
      const before = await kit.snapshot();

      const res = await kit.post(key, {
        machines: [
          minimal,
          validMachine({ category: 'c'.repeat(81) }),
          'tpl,fdm,Prusa,MK4',
          {
            template_id: ' tpl-b-full ',
            category: ' resin ',
            manufacturer: ' Elegoo ',
            model: ' Saturn 3 ',
            model_number: ' EL-3D-S3 ',
            nickname: ' Big Bertha ',
            capabilities: ['msla', 'a,b', 'quote"d', 'back\\slash', 'NULL', '{brace}'],
            is_skill_station: true,
            // unknown or server-owned fields: never stored
            verification_status: 'verified',
            account_id: other.id,
            import_job_id: 'forged',
            id: randomUUID(),
            serial: 'S-1',
          },
          validMachine({ is_skill_station: 'true' }),
        ],
      });

      kit.expectImported(res, 2, [
        rowError(1, 'category: must be at most 80 characters', 'too_long'),
        rowError(2, 'row must be an object', 'not_an_object'),
        rowError(4, 'is_skill_station: must be true or false', 'wrong_type'),
      ]);
      expect(await kit.growthSince(before)).toMatchObject({ machines: 2, listings: 0, imports: 1 });

      const rows = await machinesOf(account);
      expect(rows).toEqual([
        {
          ...minimal,
          ...MACHINE_DEFAULTS,
          verification_status: 'pending',
          account_id: account.id,
          import_job_id: expect.any(String),
        },
        {
          template_id: 'tpl-b-full',
          category: 'resin',
          manufacturer: 'Elegoo',
          model: 'Saturn 3',
          model_number: 'EL-3D-S3',
          nickname: 'Big Bertha',
          capabilities: ['msla', 'a,b', 'quote"d', 'back\\slash', 'NULL', '{brace}'],
          is_skill_station: true,
          verification_status: 'pending',
          account_id: account.id,
          import_job_id: expect.any(String),
        },
      ]);
      expect(rows[1]?.import_job_id).not.toBe('forged');
      expect(await kit.labelsOf(other)).toEqual([]);
    });

    it('stores the nickname cut to 80 code points, trimmed first, never splitting an emoji', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(key, {
        machines: [
          validMachine({ template_id: 'tpl-1', nickname: `   ${'n'.repeat(79)}${DRAGON}${DRAGON}` }),
          validMachine({ template_id: 'tpl-2', nickname: DRAGON.repeat(100) }),
          validMachine({ template_id: 'tpl-3', category: `  ${DRAGON.repeat(80)}  ` }),
        ],
      });
      kit.expectImported(res, 3, []);
      const rows = await kit.service.sql`
        select nickname, char_length(nickname) as nickname_len, category, char_length(category) as category_len
        from machines where account_id = ${account.id} order by template_id`;
      expect(rows).toEqual([
        { nickname: `${'n'.repeat(79)}${DRAGON}`, nickname_len: 80, category: 'fdm', category_len: 3 },
        { nickname: DRAGON.repeat(80), nickname_len: 80, category: 'fdm', category_len: 3 },
        { nickname: null, nickname_len: null, category: DRAGON.repeat(80), category_len: 80 },
      ]);
    });

    it('reports a NUL character as a per-row error and still creates the other rows', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(key, {
        machines: [validMachine({ template_id: 'clean' }), validMachine({ model: 'MK\u00004' }), validMachine({ capabilities: ['fdm', '\u0000'] })],
      });
      kit.expectImported(res, 1, [
        rowError(1, 'model: must not contain NUL characters', 'invalid_characters'),
        rowError(2, 'capabilities[1]: must not contain NUL characters', 'invalid_characters'),
      ]);
      expect(await kit.labelsOf(account)).toEqual(['clean']);
    });

    it('accepts 500 rows, and inserted + skipped equals the rows sent', async () => {
      const { account, key } = await kit.partner();
      const machines = Array.from({ length: 500 }, (_, i) =>
        i % 9 === 0 ? validMachine({ template_id: `bad-${i}`, manufacturer: '' }) : validMachine({ template_id: `tpl-${String(i).padStart(3, '0')}` }),
      );
      const res = await kit.post(key, { machines });
      kit.expectImported(res, 500 - 56, Array.from({ length: 56 }, (_, n) => rowError(n * 9, 'manufacturer: required', 'required')));
      const rows = await machinesOf(account);
      expect(rows.map((row) => row.template_id)).toEqual(machines.filter((_, i) => i % 9 !== 0).map((row) => row.template_id));
      expect(new Set(rows.map((row) => row.verification_status))).toEqual(new Set(['pending']));
    });

    it('records the import in the imports table with its counts, errors and request id', async () => {
      const { account, key } = await kit.partner();
      const res = await kit.post(
        key,
        { machines: [validMachine(), validMachine({ template_id: '' }), validMachine()] },
        { 'x-request-id': 'partner-machines-7' },
      );
      kit.expectImported(res, 2, [rowError(1, 'template_id: required', 'required')]);
      expect(res.headers['x-request-id']).toBe('partner-machines-7');

      const imports = await kit.importsOf(account);
      expect(imports).toEqual([
        {
          job_id: expect.any(String),
          account_id: account.id,
          kind: 'machines',
          request_id: 'partner-machines-7',
          inserted: 2,
          skipped: 1,
          errors: [rowError(1, 'template_id: required', 'required')],
        },
      ]);
      const importIds = (await machinesOf(account)).map((row) => row.import_job_id);
      expect(importIds).toEqual([imports[0]?.job_id, imports[0]?.job_id]);
    });

  });

  describe('refused requests write nothing', () => {
    let key: string;

    beforeAll(async () => {
      ({ key } = await kit.partner());
    });

    it('400 no valid rows, with every row\'s error', async () => {
      const rows = [validMachine({ model: '  ' }), 42, validMachine({ capabilities: [1] }), validMachine({ nickname: 5 })];
      await kit.expectRefused(() => kit.post(key, { machines: rows }), 400, {
        error: 'no valid rows',
        code: 'no_valid_rows',
        errors: [
          rowError(0, 'model: required', 'required'),
          rowError(1, 'row must be an object', 'not_an_object'),
          rowError(2, 'capabilities[0]: must be a string', 'wrong_type'),
          rowError(3, 'nickname: must be a string', 'wrong_type'),
        ],
      });
    });

    it('413 for a listings-sized body of 2,000,000 bytes', async () => {
      await kit.expectRefused(() => kit.postRaw(key, bodyOfSize(2_000_000)), 413, {
        error: 'Request body too large',
        code: 'body_too_large',
        limit_bytes: BODY_LIMIT_BYTES,
      });
    });
  });
});
