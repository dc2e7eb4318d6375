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

/**
 * One pass over raw bytes: each byte in order (feed), then the result. note: classes, whose
 * fields the per-byte step reads as fast as a loop's locals; closures over `let`s counted a
 * third slower.
 */
interface Counter {
  byte(b: number): void;
  result(): RecordCount;
}

/** Non-blank lines. */
class NdjsonCounter implements Counter {
  private rows = 0;
  private content = false;

  byte(b: number): void {
    if (b === NL || b === CR) {
      if (this.content) this.rows += 1;
      this.content = false;
    } else if (b !== SPACE && b !== TAB) this.content = true;
  }

  result(): RecordCount {
    return { rows: this.rows + (this.content ? 1 : 0) };
  }
}

/** Records outside quotes that hold something, minus the header. */
class CsvCounter implements Counter {
  private records = 0;
  private content = false;
  private quoted = false;

  byte(b: number): void {
    // note: an escaped quote ("") toggles twice, which leaves the state as it was.
    if (b === QUOTE) {
      this.quoted = !this.quoted;
      this.content = true;
    } else if (this.quoted) return;
    else if (b === NL || b === CR) {
      if (this.content) this.records += 1;
      this.content = false;
    } else if (b !== SPACE && b !== TAB && b !== COMMA) this.content = true;
  }

  result(): RecordCount {
    const total = this.records + (this.content ? 1 : 0);
    return { rows: Math.max(0, total - 1), ...(this.quoted ? { truncated: 'the file ends inside a quoted cell' } : {}) };
  }
}

/** Elements of the top-level array. */
class JsonCounter implements Counter {
  private rows = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private expectingElement = false;

  byte(b: number): void {
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) this.inString = false;
      return;
    }
    if (this.depth === 1 && this.expectingElement && !isBlankByte(b) && b !== COMMA && b !== CLOSE_BRACKET) {
      this.rows += 1;
      this.expectingElement = false;
    }
    if (b === QUOTE) this.inString = true;
    else if (b === OPEN_BRACKET || b === OPEN_BRACE) {
      this.depth += 1;
      if (this.depth === 1) this.expectingElement = true;
    } else if (b === CLOSE_BRACKET || b === CLOSE_BRACE) this.depth -= 1;
    else if (b === COMMA && this.depth === 1) this.expectingElement = true;
  }

  result(): RecordCount {
    return { rows: this.rows, ...(this.depth > 0 || this.inString ? { truncated: 'the file ends before its top-level array is closed' } : {}) };
  }
}

function feed(counter: Counter, bytes: Uint8Array): void {
  for (let i = 0; i < bytes.length; i += 1) counter.byte(bytes[i]!);
}

const COUNTERS: Record<InputFormatName, () => Counter> = { csv: () => new CsvCounter(), ndjson: () => new NdjsonCounter(), json: () => new JsonCounter() };

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
      feed(counter, chunk);
      continue;
    }
    head = Buffer.concat([head, chunk]);
    if (head.length < 3) continue;
    feed(counter, head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? head.subarray(3) : head);
    head = undefined;
  }
  if (head !== undefined) feed(counter, head);
  return counter.result();
}
