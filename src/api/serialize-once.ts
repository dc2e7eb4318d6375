import type { FastifySerializerCompiler } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';

/**
 * The routes' response serializer (fastify-type-provider-zod's: the answer checked against its
 * schema, then written as JSON), run once per frozen answer: the text of such an object's first
 * send is sent again for the same object. Any other answer is serialized every time. note: for a
 * route that builds an answer once and sends it many times (GET /v1/api/me, one per cached key),
 * where checking and writing it again took about a tenth of the request's CPU; frozen, the
 * object cannot change under the text kept for it.
 */
export const serializeFrozenOnce: FastifySerializerCompiler<unknown> = (route) => {
  const serialize = serializerCompiler(route as Parameters<typeof serializerCompiler>[0]);
  const texts = new WeakMap<object, string>();
  return (data: unknown) => {
    if (typeof data !== 'object' || data === null || !Object.isFrozen(data)) return serialize(data);
    let text = texts.get(data);
    if (text === undefined) {
      text = serialize(data);
      texts.set(data, text);
    }
    return text;
  };
};
