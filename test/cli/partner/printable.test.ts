import { describe, expect, it } from 'vitest';
import { printable, printableJson, serverText } from '../../../src/cli/partner/printable.js';

const hex = (code: number) => code.toString(16).padStart(4, '0');

/** One code point of each kind the terminal acts on, at the edges of every range. */
const UNSAFE: [string, number][] = [
  ['NUL', 0x00],
  ['TAB', 0x09],
  ['LF', 0x0a],
  ['CR', 0x0d],
  ['ESC', 0x1b],
  ['US (last C0)', 0x1f],
  ['DEL', 0x7f],
  ['PAD (first C1)', 0x80],
  ['CSI (C1)', 0x9b],
  ['APC (last C1)', 0x9f],
  ['ARABIC LETTER MARK', 0x061c],
  ['LEFT-TO-RIGHT MARK', 0x200e],
  ['RIGHT-TO-LEFT MARK', 0x200f],
  ['LEFT-TO-RIGHT EMBEDDING', 0x202a],
  ['RIGHT-TO-LEFT OVERRIDE', 0x202e],
  ['LEFT-TO-RIGHT ISOLATE', 0x2066],
  ['POP DIRECTIONAL ISOLATE', 0x2069],
];

/** Text a partner's catalogue holds all the time, next to the ranges above. */
const KEPT: [string, string][] = [
  ['space and ASCII punctuation', ' !"#\\~'],
  ['NO-BREAK SPACE and Latin-1 letters', '\u00a0café Größe'],
  ['other scripts', 'Ελληνικά Кириллица 日本語 العربية'],
  ['an emoji (a surrogate pair)', 'dragon 🐉'],
  ['neighbours of the bidi controls', '\u061b\u200d\u2010\u2029\u202f\u2065\u206a'],
];

describe('printable', () => {
  it.each(UNSAFE)('writes %s out as \\uXXXX', (_name, code) => {
    const char = String.fromCharCode(code);
    expect(printable(`a${char}b`)).toBe(`a\\u${hex(code)}b`);
  });

  it.each(KEPT)('leaves %s as it is', (_name, text) => {
    expect(printable(text)).toBe(text);
  });

  it('escapes every occurrence, not only the first', () => {
    expect(printable('\u001b[31mred\u001b[0m\r\n\u202e')).toBe('\\u001b[31mred\\u001b[0m\\u000d\\u000a\\u202e');
  });
});

describe('printableJson', () => {
  const value = { error: UNSAFE.map(([, code]) => String.fromCharCode(code)).join('x'), nested: [{ reason: 'ok\u202eko' }] };

  it('has none of the characters left raw', () => {
    const text = printableJson(value);
    for (const [, code] of UNSAFE) expect(text).not.toContain(String.fromCharCode(code));
  });

  it('is still JSON that reads back as exactly the same value', () => {
    expect(JSON.parse(printableJson(value))).toEqual(value);
  });
});

describe('serverText', () => {
  it('keeps a text of up to 1,000 characters whole, its controls written out', () => {
    expect(serverText('x'.repeat(1_000))).toBe('x'.repeat(1_000));
    expect(serverText('bad\u001b[2J')).toBe('bad\\u001b[2J');
  });

  it('cuts a longer one to its first 1,000 characters and says how many were left out', () => {
    expect(serverText('y'.repeat(50_000))).toBe(`${'y'.repeat(1_000)}… (49000 more characters)`);
  });

  it('never splits a surrogate pair', () => {
    expect(serverText(`${'y'.repeat(999)}🐉tail`)).toBe(`${'y'.repeat(999)}… (6 more characters)`);
  });
});
