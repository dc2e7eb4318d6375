/**
 * The control characters COPY writes raw, as a regular expression over text: for a field of a
 * batch that holds one (holdsRawControl), and the statement holdsRawControl's bytes are held to.
 */
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
export const RAW_CONTROL = /[\x00-\x07\x0e-\x1f]/;

/**
 * Whether COPY text holds a control character COPY writes raw: any but a backspace, form feed,
 * line break, carriage return, tab and vertical tab, which it escapes (a tab and a line break
 * raw are its own field and row separators). JSON must escape them; a batch of an export all but
 * never holds one, so the export asks once a batch and looks in its fields only when it does.
 *
 * note: read four bytes at a time. A word with no byte under 0x20 is passed with one test (bytes
 * of 0x80 and over never set it: a longer UTF-8 character cannot look like a control), and only
 * a word with one is looked at byte by byte. Scanning 64 KiB this way took the export about half
 * what one regular expression over the batch's text did (bench/README.md, issue 44).
 */
export function holdsRawControl(bytes: Uint8Array): boolean {
  // note: a Uint32Array must start at a multiple of four bytes; the bytes before it are looked at one by one
  const head = (4 - (bytes.byteOffset % 4)) % 4;
  if (bytes.length < head + 4) return anyRawControl(bytes, 0, bytes.length);
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset + head, (bytes.length - head) >>> 2);
  const tail = head + words.length * 4;
  if (anyRawControl(bytes, 0, head) || anyRawControl(bytes, tail, bytes.length)) return true;
  for (let w = 0; w < words.length; w += 1) {
    const word = words[w]!;
    // note: non-zero exactly when some byte of the word is under 0x20 (the "has less" test, for bounds up to 0x80)
    if (((word - 0x20202020) & ~word & 0x80808080) === 0) continue;
    const at = head + w * 4;
    if (anyRawControl(bytes, at, at + 4)) return true;
  }
  return false;
}

function anyRawControl(bytes: Uint8Array, from: number, to: number): boolean {
  for (let at = from; at < to; at += 1) {
    const byte = bytes[at]!;
    if (byte < 0x08 || (byte > 0x0d && byte < 0x20)) return true;
  }
  return false;
}
