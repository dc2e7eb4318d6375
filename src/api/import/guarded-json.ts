import secureJson from 'secure-json-parse';

const GUARDS = { protoAction: 'error', constructorAction: 'error' } as const;

/**
 * JSON.parse with the prototype-poisoning guards of every other route's parser
 * (secure-json-parse, refusing `__proto__` and `constructor` keys): throws where it throws,
 * returns what it returns. note: the library scans the whole text with two regular expressions
 * after parsing, which cost a bulk body of 185 KB more than a third of the parse itself; they can
 * only match a text holding `__proto__` or `constructor` as written, or some `\u` escape. A text
 * with none of them (and no byte order mark, which the library drops) is parsed by JSON.parse
 * alone; any other goes through the library.
 */
export function parseGuardedJson(text: string): unknown {
  const cannotMatch = text.charCodeAt(0) !== 0xfeff && !text.includes('\\u') && !text.includes('__proto__') && !text.includes('constructor');
  return cannotMatch ? JSON.parse(text) : secureJson.parse(text, undefined, GUARDS);
}
