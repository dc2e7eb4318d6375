import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderClientTypes, type GeneratedFiles } from '../../packages/client/scripts/render-client-types.js';
import { KNOWN_ERROR_CODES, KNOWN_ROW_ERROR_CODES } from '../../packages/client/src/generated/known-codes.js';
import { API_ERROR_CODES } from '../../src/shared/errors/api-errors.js';
import { ROW_ERROR_CODES } from '../../src/shared/rows/row-error-codes.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The client package's generated types are the served document's: rendered afresh from GET
 * /v1/openapi.json, they are byte for byte the committed files. When this fails, the document
 * changed: run `npm run client:generate` and commit packages/client/src/generated/.
 */
describe('packages/client/src/generated', () => {
  let service: TestService;
  let fresh: GeneratedFiles;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    const res = await service.request({ method: 'GET', url: '/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    fresh = await renderClientTypes(res.json());
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each(['openapi.ts', 'api-version.ts', 'known-codes.ts'] as const)('%s is what the served document generates (else: npm run client:generate)', async (name) => {
    const committed = await readFile(new URL(`../../packages/client/src/generated/${name}`, import.meta.url), 'utf8');
    expect(committed === fresh[name], `packages/client/src/generated/${name} differs from a fresh generation: run npm run client:generate`).toBe(true);
  });

  it('lists as known every error code and row-error code the service has, and no other', () => {
    expect(KNOWN_ERROR_CODES).toEqual([...new Set(API_ERROR_CODES)].sort());
    expect(KNOWN_ROW_ERROR_CODES).toEqual([...ROW_ERROR_CODES].sort());
  });
});
