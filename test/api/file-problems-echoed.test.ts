import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILE_PROBLEM_MAX_LENGTH } from '../../src/shared/errors/api-errors.js';
import { CONTROL_CHARACTERS } from '../../src/shared/rows/control-characters.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const PREFIX = 'The file cannot be read: ';

/**
 * A file's problem quotes what the file holds (a CSV header, a field csv-parse stopped in): the
 * 400 shows it escaped and bounded, whatever the reader put in its message
 * (docs/errors.md#partner-input-in-error-texts).
 */
describe('POST /v1/api/imports: 400 file_unreadable quoting the file', () => {
  let service: TestService;
  let key: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    ({ key } = await newPartner(service));
  });
  afterAll(async () => {
    await service?.close();
  });

  const upload = (csv: string) =>
    service.request({ method: 'POST', url: '/v1/api/imports?kind=listings', headers: { ...bearer(key), 'content-type': 'text/csv' }, payload: csv });

  it.each([
    ['a header of 100,000 unknown column names', `${Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',')}\nx\n`],
    ['a header naming its column with a U+202E and ESC twice', 'title,a\u202eb\u001b[2J,a\u202eb\u001b[2J\nx,y,z\n'],
    ['a header with a U+202E and no field', '\u202eevil,\u009bcolumn\nx,y\n'],
    ['a field csv-parse stops in, of 500,000 characters', `title,description\n${'v'.repeat(500_000)}"x,y\n`],
  ])('answers %s 400, at most the bound, with no control character', async (_what, csv) => {
    const res = await upload(csv);
    expect(res.statusCode).toBe(400);
    const body = res.json<{ error: string; code: string }>();
    expect(body.code).toBe('file_unreadable');
    expect(body.error.startsWith(PREFIX)).toBe(true);
    expect([...body.error].length).toBeLessThanOrEqual(PREFIX.length + FILE_PROBLEM_MAX_LENGTH + 1);
    // eslint-disable-next-line no-control-regex -- control characters are what must not come back
    expect(body.error).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    // eslint-disable-next-line no-control-regex -- nor be logged
    expect(service.rawLogs()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it('shows JSON.parse\'s quote of the line escaped and bounded, in the 400\'s errors and in the stored reasons alike', async () => {
    const line = `{"title":\u001b[2J\u202e${'x'.repeat(100_000)}\n`;
    const res = await service.request({ method: 'POST', url: '/v1/api/imports?kind=listings', headers: { ...bearer(key), 'content-type': 'application/x-ndjson' }, payload: line });
    expect(res.statusCode).toBe(400);
    const [failure] = res.json<{ errors: { index: number; reason: string; details: { message: string }[] }[] }>().errors;
    expect(failure!.reason).toMatch(/^invalid JSON: /);
    expect(failure!.reason).toContain('\\u001b');
    expect(failure!.reason).not.toMatch(CONTROL_CHARACTERS);
    expect([...failure!.reason].length).toBeLessThanOrEqual(201);
    expect(failure!.details[0]!.message).toBe(failure!.reason);
  });
});
