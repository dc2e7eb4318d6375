import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serializeFrozenOnce } from '../../src/api/serialize-once.js';

/** The answer serializer of GET /v1/api/me: a frozen answer is checked and written once. */
describe('serializeFrozenOnce', () => {
  const compile = () => {
    let checks = 0;
    const schema = z.object({ id: z.string(), tags: z.array(z.string()) }).refine(() => {
      checks += 1;
      return true;
    });
    const serialize = serializeFrozenOnce({ schema, method: 'GET', url: '/v1/api/me', httpStatus: '200' });
    return { serialize, checks: () => checks };
  };

  it('checks and writes a frozen answer once, and sends its text again for the same object', () => {
    const { serialize, checks } = compile();
    const answer = Object.freeze({ id: 'a', tags: Object.freeze(['x']) });
    expect(serialize(answer)).toBe('{"id":"a","tags":["x"]}');
    expect(serialize(answer)).toBe('{"id":"a","tags":["x"]}');
    expect(checks()).toBe(1);
  });

  it('checks and writes every other answer each time, equal ones too', () => {
    const { serialize, checks } = compile();
    const answer = { id: 'a', tags: ['x'] };
    serialize(answer);
    answer.tags.push('y');
    expect(serialize(answer)).toBe('{"id":"a","tags":["x","y"]}');
    serialize(Object.freeze({ id: 'a', tags: ['x'] }));
    expect(checks()).toBe(3);
  });

  it('refuses a frozen answer that breaks the schema every time it is sent', () => {
    const { serialize } = compile();
    const answer = Object.freeze({ id: 1, tags: [] });
    expect(() => serialize(answer)).toThrow();
    expect(() => serialize(answer)).toThrow();
  });
});
