import type { SourceRow } from '../../shared/import/file/source-row.js';
import { FileNotUtf8Error } from '../../shared/import/file/file-read-error.js';

/**
 * The longest line read as an entry. note: an id is at most 100 characters (400 bytes of UTF-8);
 * a longer line is no id, and fails as its entry without being held.
 */
export const ENTRY_LINE_MAX_BYTES = 4_096;

const LF = 0x0a;

/**
 * The entries of an archive or delete file: one per line, as written (the server trims an
 * external_id as an import does), LF or CRLF line ends, blank lines skipped, a UTF-8 byte order
 * mark dropped. `location` is the 1-based line. A line over `maxLineBytes` fails as that entry,
 * dropped as it arrives; text that is not UTF-8 stops the file (FileNotUtf8Error).
 */
export async function* readEntryLines(input: AsyncIterable<Buffer | string>, maxLineBytes = ENTRY_LINE_MAX_BYTES): AsyncGenerator<SourceRow> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let line = 0;
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let tooLong = false;

  const entryOf = (bytes: Buffer): SourceRow | undefined => {
    line += 1;
    if (tooLong) return { location: line, error: `line longer than ${maxLineBytes} bytes` };
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      throw new FileNotUtf8Error();
    }
    if (line === 1) text = text.replace(/^\uFEFF/, '');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    return text.trim() === '' ? undefined : { location: line, value: text };
  };

  for await (const chunk of input) {
    let bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let at = bytes.indexOf(LF); at !== -1; at = bytes.indexOf(LF)) {
      const head = bytes.subarray(0, at);
      if (!tooLong && partialBytes + head.length > maxLineBytes) tooLong = true;
      const entry = entryOf(tooLong ? Buffer.alloc(0) : Buffer.concat([...partial, head]));
      if (entry) yield entry;
      partial = [];
      partialBytes = 0;
      tooLong = false;
      bytes = bytes.subarray(at + 1);
    }
    if (tooLong) continue;
    partialBytes += bytes.length;
    if (partialBytes > maxLineBytes) {
      tooLong = true;
      partial = [];
    } else if (bytes.length > 0) partial.push(Buffer.from(bytes));
  }
  if (partialBytes > 0 || tooLong) {
    const entry = entryOf(tooLong ? Buffer.alloc(0) : Buffer.concat(partial));
    if (entry) yield entry;
  }
}
