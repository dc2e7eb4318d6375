import diagnosticsChannel from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORT_STEPS, IMPORT_STEPS_CHANNEL, type ImportStepEvent } from '../../../src/shared/import/import-steps.js';
import { bearer, validListing } from '../../support/fixtures.js';
import { startTestService, type TestService } from '../../support/test-service.js';

/** The moments `npm run bench:phases` times: published by the API and the worker (here in one process). */
describe('import steps', () => {
  let service: TestService;
  const seen: ImportStepEvent[] = [];
  const record = (event: unknown) => void seen.push(event as ImportStepEvent);

  beforeAll(async () => {
    service = await startTestService();
    diagnosticsChannel.subscribe(IMPORT_STEPS_CHANNEL, record);
  });
  afterAll(async () => {
    diagnosticsChannel.unsubscribe(IMPORT_STEPS_CHANNEL, record);
    await service?.close();
  });

  it('marks every step of an import once, in order, under its request id', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account, ['listings:write']);
    const response = await service.request({
      method: 'POST',
      url: '/v1/api/listings/bulk',
      headers: { ...bearer(key), 'x-request-id': 'steps-test-1' },
      payload: { listings: [validListing(), validListing()] },
    });
    expect(response.statusCode).toBe(201);
    const mine = seen.filter((event) => event.requestId === 'steps-test-1');
    expect(mine.map((event) => event.step)).toEqual(IMPORT_STEPS);
    const times = mine.map((event) => event.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThan(Date.now() - 60_000);
  });
});
