import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

/**
 * A validator holding the service's OpenAPI document under the id `openapi`, so that a test
 * checks an answer against `openapi#/paths/...` or a component.
 */
export function documentValidator(doc: unknown): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajvFormats.default(ajv);
  ajv.addSchema(doc as object, 'openapi');
  return ajv;
}
