import { Readable } from 'node:stream';

/** The text as a stream, in chunks of `chunkSize` bytes, so records straddle chunk boundaries. */
export function streamOf(text: string, chunkSize = 3): Readable {
  const bytes = Buffer.from(text, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) chunks.push(bytes.subarray(i, i + chunkSize));
  return Readable.from(chunks);
}
