import type { Readable } from 'node:stream';
import type { InputFormatName } from '../../shared/import/file/source-row.js';

const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const isBlankByte = (b: number) => b === SPACE || b === TAB || b === NL || b === CR;

export interface RecordCount {
  /** rows in the file (data records for CSV, non-blank lines for NDJSON, array elements for JSON) */
  rows: number;
  /** set when the file ends in the middle of a record (an open quote, an unclosed array) */
  truncated?: string;
}

/** One pass over raw bytes; feed chunks, then read the result. */
interface Counter {
  feed(chunk: Uint8Array): void;
  result(): RecordCount;
}

/** Non-blank lines. */
function ndjsonCounter(): Counter {
  let rows = 0;
  let content = false;
  return {
    feed(chunk) {
      for (let i = 0; i < chunk.length; i += 1) {
        const b = chunk[i]!;
        if (b === NL || b === CR) {
          if (content) rows += 1;
          content = false;
        } else if (b !== SPACE && b !== TAB) content = true;
      }
    },
    result: () => ({ rows: rows + (content ? 1 : 0) }),
  };
}

/** Records outside quotes that hold something, minus the header. */
function csvCounter(): Counter {
  let records = 0;
  let content = false;
  let quoted = false;
  return {
    feed(chunk) {
      for (let i = 0; i < chunk.length; i += 1) {
        const b = chunk[i]!;
        // note: an escaped quote ("") toggles twice, which leaves the state as it was.
        if (b === QUOTE) {
          quoted = !quoted;
          content = true;
        } else if (quoted) continue;
        else if (b === NL || b === CR) {
          if (content) records += 1;
          content = false;
        } else if (b !== SPACE && b !== TAB && b !== COMMA) content = true;
      }
    },
    result() {
      const total = records + (content ? 1 : 0);
      return { rows: Math.max(0, total - 1), ...(quoted ? { truncated: 'the file ends inside a quoted cell' } : {}) };
    },
  };
}

/** Elements of the top-level array. */
function jsonCounter(): Counter {
  let rows = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let expectingElement = false;
  return {
    feed(chunk) {
      for (let i = 0; i < chunk.length; i += 1) {
        const b = chunk[i]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (b === BACKSLASH) escaped = true;
          else if (b === QUOTE) inString = false;
          continue;
        }
        if (depth === 1 && expectingElement && !isBlankByte(b) && b !== COMMA && b !== CLOSE_BRACKET) {
          rows += 1;
          expectingElement = false;
        }
        if (b === QUOTE) inString = true;
        else if (b === OPEN_BRACKET || b === OPEN_BRACE) {
          depth += 1;
          if (depth === 1) expectingElement = true;
        } else if (b === CLOSE_BRACKET || b === CLOSE_BRACE) depth -= 1;
        else if (b === COMMA && depth === 1) expectingElement = true;
      }
    },
    result: () => ({ rows, ...(depth > 0 || inString ? { truncated: 'the file ends before its top-level array is closed' } : {}) }),
  };
}

const COUNTERS: Record<InputFormatName, () => Counter> = { csv: csvCounter, ndjson: ndjsonCounter, json: jsonCounter };

/**
 * Counts the rows of a file in one streaming pass over its bytes, without parsing values: the
 * total of the progress bar, and an early warning of a truncated file before anything is sent.
 * The count is exact for well-formed files; odd lines (only commas, say) can make it an estimate.
 */
export async function countRecords(input: Readable, format: InputFormatName): Promise<RecordCount> {
  const counter = COUNTERS[format]();
  // note: a UTF-8 byte order mark is dropped here, so the counters need not test for it per byte.
  let head: Buffer | undefined = Buffer.alloc(0);
  for await (const chunk of input as AsyncIterable<Buffer>) {
    if (head === undefined) {
      counter.feed(chunk);
      continue;
    }
    head = Buffer.concat([head, chunk]);
    if (head.length < 3) continue;
    counter.feed(head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? head.subarray(3) : head);
    head = undefined;
  }
  if (head !== undefined) counter.feed(head);
  return counter.result();
}
