/**
 * Characters a terminal acts on instead of showing: C0 controls (ESC starts a colour or a cursor
 * move, CR overwrites the line), DEL, C1 controls (U+009B is a one-character CSI), and the
 * bidirectional controls (U+202E shows the rest of the line backwards).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TERMINAL_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** The same without C0, which JSON.stringify escapes already. */
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Text for the terminal, with every character above written as `\uXXXX`. note: the CLI prints
 * what it did not write itself (CSV header names, file names, server messages and row reasons);
 * a hostile file or server must not be able to rewrite the screen or hide what it says.
 */
export function printable(text: string): string {
  return text.replace(TERMINAL_UNSAFE, escaped);
}

/**
 * A CSV cell's text, as printable() writes it but for line feeds and tabs, which a quoted cell
 * holds as they are (a description's lines) and a terminal shows as they are.
 */
export function printableCell(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (char) => (char === '\n' || char === '\t' ? char : escaped(char)));
}

/** JSON.stringify whose output is as safe to print (still valid JSON: `\uXXXX` inside strings). */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(JSON_UNSAFE, escaped);
}

/**
 * The most of one text a server sends (its error, a row's reason or message) the CLI keeps.
 * note: a real one is a sentence or a list of field problems, a few hundred characters; a
 * hostile or broken server could send megabytes, which would otherwise be copied into every
 * report line of the batch and onto the screen.
 */
export const SERVER_TEXT_MAX_CHARS = 1_000;

/**
 * A text from the server as the CLI passes it on, to the screen and to the report alike: its first
 * `max` characters (a surrogate pair is never split), then how many were left out, with the
 * characters printable() writes out written out, so a report read on a terminal is as safe.
 */
export function serverText(text: string, max = SERVER_TEXT_MAX_CHARS): string {
  if (text.length <= max) return printable(text);
  const end = /[\ud800-\udbff]/.test(text[max - 1] ?? '') ? max - 1 : max;
  return `${printable(text.slice(0, end))}… (${text.length - end} more characters)`;
}
