import fc from 'fast-check';
import secureJson from 'secure-json-parse';
import { describe, expect, it } from 'vitest';
import { parseGuardedJson } from '../../../src/api/import/guarded-json.js';

type Outcome = { value: unknown } | { threw: string };
const outcomeOf = (parse: () => unknown): Outcome => {
  try {
    return { value: parse() };
  } catch (error) {
    return { threw: (error as Error).constructor.name };
  }
};
const byTheLibrary = (text: string) => outcomeOf(() => secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));

/** Keys that poison a prototype, as written and escaped, beside harmless ones. */
const key = fc.constantFrom('title', 'price_cents', '__proto__', 'constructor', '\\u005f_proto__', 'constr\\u0075ctor', '__pro\\u0074o__', 'proto', 'a\\u00e9', 'x');
const value = fc.oneof(fc.integer(), fc.constant('"text"'), fc.constant('"a constructor, written in a value"'), fc.constant('null'), fc.constant('{"prototype": {"x": 1}}'));
const member = fc.tuple(key, value).map(([k, v]) => `"${k}": ${v}`);
const objectText = fc.array(member, { maxLength: 4 }).map((members) => `{${members.join(', ')}}`);
const bodyText = fc.tuple(objectText, fc.array(objectText, { maxLength: 3 }), fc.boolean()).map(
  ([outer, rows, bom]) => `${bom ? '\uFEFF' : ''}{"listings": [${rows.join(',')}], "meta": ${outer}}`,
);

/** The fast path in front of secure-json-parse must never change what it answers. */
describe('parseGuardedJson', () => {
  it('answers as secure-json-parse does: the same value, or a refusal where it refuses', () => {
    fc.assert(
      fc.property(bodyText, (text) => {
        expect(outcomeOf(() => parseGuardedJson(text))).toEqual(byTheLibrary(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses a prototype key, written or escaped, and takes a body without one', () => {
    for (const text of ['{"__proto__": {"x": 1}}', '{"\\u005f_proto__": {}}', '{"constructor": {"prototype": {"x": 1}}}', '{"listings": [{"constr\\u0075ctor": {"prototype": {}}}]}']) {
      expect(() => parseGuardedJson(text), text).toThrow(SyntaxError);
    }
    expect(parseGuardedJson('{"listings": [{"title": "Printer", "price_cents": 100}]}')).toEqual({ listings: [{ title: 'Printer', price_cents: 100 }] });
  });
});
