import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { apiErrors, FILE_PROBLEM_MAX_LENGTH } from '../../../src/shared/errors/api-errors.js';
import { ECHOED_MAX_LENGTH, echoedText } from '../../../src/shared/errors/echoed-text.js';
import { CONTROL_CHARACTERS } from '../../../src/shared/rows/control-characters.js';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const codePoints = (text: string) => [...text].length;
const EMOJI = '\u{1F680}';

/** The partner input echoed into error texts and log lines (docs/errors.md#partner-input-in-error-texts). */
describe('echoedText', () => {
  it.each<[string, string, string]>([
    ['a plain name, as it is', 'dryRun', 'dryRun'],
    ['an empty text, as ""', '', '""'],
    ['a NUL', 'a\u0000b', 'a\\u0000b'],
    ['ESC, a C0 control', '\u001b[2J', '\\u001b[2J'],
    ['a line break and a tab', 'a\nb\tc', 'a\\u000ab\\u0009c'],
    ['DEL', 'a\u007f', 'a\\u007f'],
    ['a C1 control (CSI)', '\u009b31m', '\\u009b31m'],
    ['the right-to-left override', 'a\u202eb', 'a\\u202eb'],
    ['a lone high surrogate', 'a\ud800b', 'a\\ud800b'],
    ['a lone low surrogate', '\udc00', '\\udc00'],
    ['a pair, as it is', `x${EMOJI}`, `x${EMOJI}`],
    ['quotes and backslashes, unquoted, as they are', 'a"b\\c', 'a"b\\c'],
    ['accents and other scripts', 'café 同步 שלום', 'café 同步 שלום'],
    ['64 characters whole', 'n'.repeat(64), 'n'.repeat(64)],
    ['65 characters cut to 64 and …', 'n'.repeat(65), `${'n'.repeat(64)}…`],
    ['10,000 characters cut to 64 and …', 'n'.repeat(10_000), `${'n'.repeat(64)}…`],
    ['escapes counted as written', '\u0001'.repeat(20), `${'\\u0001'.repeat(10)}…`],
    ['an escape that would cross 64 left out whole', `${'n'.repeat(60)}\u202e`, `${'n'.repeat(60)}…`],
    ['pairs counted as one character each, never split', EMOJI.repeat(100), `${EMOJI.repeat(64)}…`],
    ['a pair at the 64th place kept whole', `${'n'.repeat(63)}${EMOJI}${EMOJI}`, `${'n'.repeat(63)}${EMOJI}…`],
  ])('writes %s', (_what, text, shown) => {
    expect(echoedText(text)).toBe(shown);
  });

  it.each(['061c', '200e', '200f', '202a', '202b', '202c', '202d', '202e', '2066', '2067', '2068', '2069'])('writes the bidirectional control U+%s as \\uXXXX', (hex) => {
    expect(echoedText(`a${String.fromCharCode(parseInt(hex, 16))}b`)).toBe(`a\\u${hex}b`);
  });

  it.each<[string, string, string]>([
    ['a plain scope in quotes', 'listing:write', '"listing:write"'],
    ['an empty text as ""', '', '""'],
    ['quotes and backslashes escaped as JSON does', 'a"b\\c', '"a\\"b\\\\c"'],
    ['a control character as \\uXXXX', 'a\u202eb\u0000', '"a\\u202eb\\u0000"'],
    ['a long text cut inside the quotes', 'n'.repeat(100), `"${'n'.repeat(64)}…"`],
    ['an escaped quote counted as its two', '"'.repeat(40), `"${'\\"'.repeat(32)}…"`],
  ])('quoted, writes %s', (_what, text, shown) => {
    expect(echoedText(text, { quoted: true })).toBe(shown);
  });

  it('takes another bound', () => {
    expect(echoedText('abcdef', { max: 3 })).toBe('abc…');
    expect(echoedText('a\u202eb', { max: 7 })).toBe('a\\u202e…');
    expect(echoedText('n'.repeat(400), { max: 400 })).toBe('n'.repeat(400));
  });

  /** Any code unit at all, weighted towards what the rule is about. */
  const unit = fc.oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    fc.constantFrom('\u0000', '\u001b', '\n', '\u007f', '\u009b', '\u202e', '\u2066', '\u061c', '\ud800', '\udfff', '"', '\\', EMOJI, '…'),
  );
  const partnerText = fc.array(unit, { maxLength: 300 }).map((units) => units.join(''));
  const max = fc.integer({ min: 1, max: 500 });

  it('never shows more than the bound (and …), nor a control character, a bidirectional control or a lone surrogate', () => {
    fc.assert(
      fc.property(partnerText, max, fc.boolean(), (text, bound, quoted) => {
        const shown = echoedText(text, { max: bound, quoted });
        expect(codePoints(shown)).toBeLessThanOrEqual(bound + 1 + (quoted ? 2 : 0) + (text === '' ? 2 : 0));
        expect(shown).not.toMatch(CONTROL_CHARACTERS);
        expect(shown).not.toMatch(LONE_SURROGATE);
      }),
      { numRuns: 2_000 },
    );
  });

  it('quoted, is a JSON string of the text, or of a prefix of it and …', () => {
    fc.assert(
      fc.property(partnerText, max, (text, bound) => {
        const shown = echoedText(text, { max: bound, quoted: true });
        const read = JSON.parse(shown) as string;
        if (read === text) return;
        expect(read.endsWith('…')).toBe(true);
        // a prefix of whole characters: a cut never leaves half a pair behind
        const prefix = read.slice(0, -1);
        expect([...text].slice(0, [...prefix].length).join('')).toBe(prefix);
      }),
      { numRuns: 2_000 },
    );
  });

  it('unquoted, leaves its own output as it is (a message built with it can pass through it again)', () => {
    fc.assert(
      fc.property(partnerText, (text) => {
        const shown = echoedText(text);
        expect(echoedText(shown)).toBe(shown);
        expect(echoedText(`The file cannot be read: got ${shown}`, { max: FILE_PROBLEM_MAX_LENGTH })).toBe(`The file cannot be read: got ${shown}`);
      }),
      { numRuns: 2_000 },
    );
  });

  it(`bounds partner text to ${ECHOED_MAX_LENGTH} characters`, () => {
    expect(ECHOED_MAX_LENGTH).toBe(64);
  });
});

/** The catalogue's texts that carry partner input echo it there, whoever calls them. */
describe('the error texts that quote partner input', () => {
  it('Unknown query parameter: the name, echoed', () => {
    expect(apiErrors.unknownQueryParameter(`\u202e${'p'.repeat(10_000)}`).body.error).toBe(`Unknown query parameter: \\u202e${'p'.repeat(58)}…`);
  });

  it('unknown scope: the scope, echoed in quotes; the catalogue\'s text unchanged for a plain one', () => {
    expect(apiErrors.unknownScope('admin', ['jobs:read']).body.error).toBe('scopes: unknown scope "admin"; valid scopes: jobs:read');
    expect(apiErrors.unknownScope('', ['jobs:read']).body.error).toBe('scopes: unknown scope ""; valid scopes: jobs:read');
    expect(apiErrors.unknownScope(`a"\u202e${'s'.repeat(10_000)}`, ['jobs:read']).body.error).toBe(
      `scopes: unknown scope "a\\"\\u202e${'s'.repeat(55)}…"; valid scopes: jobs:read`,
    );
  });

  it(`The file cannot be read: the reader's problem, escaped and at most ${FILE_PROBLEM_MAX_LENGTH} characters`, () => {
    expect(apiErrors.fileUnreadable('line 2 has 3 cells').body.error).toBe('The file cannot be read: line 2 has 3 cells');
    const header = `\u202e${'x,'.repeat(1_000_000)}`;
    const error = apiErrors.fileUnreadable(`the first line must be a header naming listings fields (title); got ${JSON.stringify(header)}`).body.error;
    expect(error.startsWith('The file cannot be read: the first line must be a header naming listings fields (title); got "\\u202ex,x,')).toBe(true);
    expect(codePoints(error)).toBe('The file cannot be read: '.length + FILE_PROBLEM_MAX_LENGTH + 1);
    expect(error).not.toMatch(CONTROL_CHARACTERS);
  });
});
