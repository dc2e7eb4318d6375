import { Readable } from 'node:stream';
import { request, type Pool } from 'undici';
import { fileListingChunks } from './file-rows.js';

/** What the benchmark reads of an import (docs/imports.md). */
export interface ImportView {
  id: string;
  state: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  rows: { received: number; processed: number; inserted: number; skipped: number };
}

/** Uploads `rows` listings as one NDJSON file, streamed as the socket drains; resolves at the 202 with the import and how long it took. */
export async function uploadListingsFile(baseUrl: string, key: string, rows: number): Promise<{ import: ImportView; ms: number }> {
  const started = performance.now();
  const { statusCode, body } = await request(`${baseUrl}/v1/api/imports?kind=listings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
    body: Readable.from(fileListingChunks(rows)),
    // note: the API answers only once the whole file is stored; undici's default 5-minute
    // timeouts are the bound, not REQUEST_TIMEOUT_MS's 30 s, which only the server applies.
  });
  const answer = await body.text();
  const ms = performance.now() - started;
  if (statusCode !== 202) throw new Error(`bench: the file upload answered ${statusCode}: ${answer.slice(0, 500)}`);
  return { import: (JSON.parse(answer) as { import: ImportView }).import, ms };
}

/** `GET /v1/api/imports/{id}`. */
export async function readImport(pool: Pool, key: string, id: string): Promise<ImportView> {
  const { statusCode, body } = await pool.request({ path: `/v1/api/imports/${id}`, method: 'GET', headers: { authorization: `Bearer ${key}` } });
  const answer = await body.text();
  if (statusCode !== 200) throw new Error(`bench: reading import ${id} answered ${statusCode}: ${answer.slice(0, 500)}`);
  return JSON.parse(answer) as ImportView;
}

const ENDED = ['completed', 'failed', 'cancelled'];

/**
 * Polls the import every `intervalMs` until its state is one of `states` or it has ended;
 * resolves with it and the time (performance.now()) it was first seen so.
 */
export async function waitForImport(
  pool: Pool,
  key: string,
  id: string,
  states: readonly ImportView['state'][],
  intervalMs = 200,
): Promise<{ import: ImportView; at: number }> {
  for (;;) {
    const seen = await readImport(pool, key, id);
    if (states.includes(seen.state) || ENDED.includes(seen.state)) return { import: seen, at: performance.now() };
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
