import type { Readable } from 'node:stream';
import chain from 'stream-chain';
import { parser } from 'stream-json';
import { streamArray } from 'stream-json/streamers/stream-array.js';
import { FileReadError } from './file-read-error.js';
import type { SourceRow } from './source-row.js';

/**
 * Streams the elements of a JSON file whose top level is an array, one at a time (stream-json):
 * the file is never held whole. Each row's location is its index in the array.
 */
export async function* readJsonRows(input: Readable): AsyncGenerator<SourceRow> {
  const pipeline = chain([input, parser(), streamArray()]);
  input.once('error', (error) => pipeline.destroy(error));
  try {
    for await (const item of pipeline as AsyncIterable<{ key: number; value: unknown }>) {
      yield { location: item.key, value: item.value };
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new FileReadError(`not a JSON array of rows: ${message}`);
  }
}
