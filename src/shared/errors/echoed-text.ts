import { CONTROL_CHARACTERS } from '../rows/control-characters.js';

/** The most characters of partner input an error text shows. */
export const ECHOED_MAX_LENGTH = 64;

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
const isLoneSurrogate = (char: string) => char.length === 1 && char >= '\ud800' && char <= '\udfff';
/** Text shown unquoted as it is, when short enough: nothing in it is escaped. */
const PRINTABLE_ASCII = /^[ -~]+$/;

export interface EchoOptions {
  /**
   * Shown between `"` as JSON writes a string, `"` and `\` escaped as `\"` and `\\` (an empty text
   * is then `""` as any other): for a text that sits inside a sentence, `unknown scope "<scope>"`.
   */
  quoted?: boolean;
  /** the most characters shown, for a text that is the service's own words around partner input */
  max?: number;
}

/** How one character of partner input is written. */
function written(char: string, quoted: boolean): string {
  if (CONTROL_CHARACTERS.test(char) || isLoneSurrogate(char)) return escaped(char);
  if (quoted && (char === '"' || char === '\\')) return `\\${char}`;
  return char;
}

/**
 * Partner input as an error text or a log line shows it (docs/errors.md#partner-input-in-error-texts):
 * control characters (CONTROL_CHARACTERS: C0, DEL, C1, the bidirectional controls) and lone
 * surrogates written as `\uXXXX`; at most `max` (ECHOED_MAX_LENGTH) characters, counted in code
 * points as written (an escape counts six; a pair is one character, never split), and then `…`
 * where the text went on. An empty text is `""`; `quoted` adds JSON's quotes and escapes.
 * note: the text goes into JSON bodies, log lines and partners' terminals; what a partner sent
 * must not move a cursor, reverse the line around it or come back as a 16 KB string. The output
 * is plain text again (no control character, no lone surrogate), and, unquoted, echoing it again
 * leaves it as it is: a reader's message built with it can pass through an error's own echo.
 */
export function echoedText(text: string, { quoted = false, max = ECHOED_MAX_LENGTH }: EchoOptions = {}): string {
  if (text === '' && !quoted) return '""';
  // note: the usual case, on every request's log line (its path): one regex test, no copy.
  if (!quoted && text.length <= max && PRINTABLE_ASCII.test(text)) return text;
  let shown = '';
  let count = 0;
  let cut = false;
  for (const char of text) {
    const piece = written(char, quoted);
    // note: a character shown as it is counts one (a surrogate pair too); an escape is ASCII, one per unit.
    const width = piece === char ? 1 : piece.length;
    if (count + width > max) {
      cut = true;
      break;
    }
    shown += piece;
    count += width;
  }
  const ended = cut ? `${shown}…` : shown;
  return quoted ? `"${ended}"` : ended;
}
