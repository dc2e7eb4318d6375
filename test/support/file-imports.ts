import type { LightMyRequestResponse } from 'fastify';
import { bearer } from './fixtures.js';
import type { TestService } from './test-service.js';

/** Rows as an NDJSON file: one JSON object a line, the last one ended too. */
export const ndjson = (rows: object[]): string => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

/** POST /v1/api/imports?kind=listings`query` with `key`: a whole file of listings, sent as `contentType`. */
export function uploadListingsFile(
  service: TestService,
  key: string,
  query: string,
  payload: string,
  contentType = 'application/x-ndjson',
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return service.request({ method: 'POST', url: `/v1/api/imports?kind=listings${query}`, headers: { ...bearer(key), 'content-type': contentType, ...headers }, payload });
}

/** GET /v1/api/imports/{id} with `key`: the import as the partner reads it. */
export async function readImport<T>(service: TestService, key: string, id: string): Promise<T> {
  return (await service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) })).json<T>();
}
