import { Readable } from 'node:stream';
import { request } from 'undici';
import { fileListingLine } from './file-rows.js';
import type { ImportView } from './file-import.js';

/**
 * The mirror file of the `catalogue` section: the whole-file benchmark's lines
 * (bench/lib/file-rows.ts), each with the `external_id` `M-<n>` of the row it stands for
 * (bench/lib/catalogue-fill.ts fillMirrorListings). note: generated a chunk at a time, never held
 * whole, as the whole-file benchmark's.
 */

/** Line `n` of the mirror file. */
export function mirrorLine(n: number): string {
  return `{"external_id":"M-${n}",${fileListingLine(n).slice(1)}`;
}

function* mirrorChunks(rows: number, linesPerChunk = 1_000): Generator<string> {
  for (let n = 0; n < rows; n += linesPerChunk) {
    let chunk = '';
    for (let i = n; i < Math.min(rows, n + linesPerChunk); i += 1) chunk += mirrorLine(i);
    yield chunk;
  }
}

/** The file's size in bytes (its lines are ASCII). */
export function mirrorBytes(rows: number): number {
  let bytes = 0;
  for (let n = 0; n < rows; n += 1) bytes += mirrorLine(n).length;
  return bytes;
}

/** What the benchmark reads of a mirror import (docs/catalogue.md#mirror). */
export interface MirrorView extends Omit<ImportView, 'rows'> {
  mode: string;
  rows: ImportView['rows'] & { updated: number; unchanged: number; archived: number };
  removal: { missing: string; max_removal: number; state: 'pending' | 'done' | 'held' | 'skipped'; rows: number } | null;
}

/**
 * Uploads lines 0 to `rows - 1` as one NDJSON mirror of the account's listings
 * (`mode=mirror&max_removal=<maxRemoval>`), streamed as the socket drains; resolves at the 202
 * with the import and how long it took.
 */
export async function uploadMirrorFile(baseUrl: string, key: string, rows: number, maxRemoval: number): Promise<{ import: MirrorView; ms: number }> {
  const started = performance.now();
  const { statusCode, body } = await request(`${baseUrl}/v1/api/imports?kind=listings&mode=mirror&max_removal=${maxRemoval}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
    body: Readable.from(mirrorChunks(rows)),
  });
  const answer = await body.text();
  const ms = performance.now() - started;
  if (statusCode !== 202) throw new Error(`bench: the mirror upload answered ${statusCode}: ${answer.slice(0, 500)}`);
  return { import: (JSON.parse(answer) as { import: MirrorView }).import, ms };
}
