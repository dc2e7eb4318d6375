import { CONTROL_CHARACTERS } from '../rows/control-characters.js';

/** The most characters of partner input an error text shows. */
export const ECHOED_MAX_LENGTH = 64;

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
const isLoneSurrogate = (char: string) => char.length === 1 && char >= '\ud800' && char <= '\udfff';

/**
 * Partner input as an error text shows it (docs/errors.md#partner-input-in-error-texts): control
 * characters (CONTROL_CHARACTERS) and lone surrogates written as `\uXXXX`, at most
 * ECHOED_MAX_LENGTH characters (escapes counted as written) and then `…`, an empty text as `""`.
 * note: the text goes into JSON bodies, log lines and partners' terminals; what a partner sent
 * must not move a cursor, reverse the line around it or come back as a 16 KB string.
 */
export function echoedText(text: string): string {
  if (text === '') return '""';
  let shown = '';
  for (const char of text) {
    const piece = CONTROL_CHARACTERS.test(char) || isLoneSurrogate(char) ? escaped(char) : char;
    if (shown.length + piece.length > ECHOED_MAX_LENGTH) return `${shown}…`;
    shown += piece;
  }
  return shown;
}
