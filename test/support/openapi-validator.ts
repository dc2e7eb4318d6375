import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

/**
 * A validator holding the service's OpenAPI document under the id `openapi`, so that a test
 * checks an answer against `openapi#/paths/...` or a component.
 */
export function documentValidator(doc: unknown, options: { coerceTypes?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, ...options });
  ajvFormats.default(ajv);
  ajv.addSchema(doc as object, 'openapi');
  return ajv;
}

/** JSON pointer of a key path in the document. */
export const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/** A request as it was sent: what a gateway in front of the service sees. */
export interface SentRequest {
  method: string;
  /** the request target: path and query, as sent (percent-encoded) */
  url: string;
  /** header names in any case */
  headers: Record<string, string | undefined>;
  /** the body's bytes as sent; undefined when there is none */
  body?: string | Buffer;
}

interface Parameter {
  in: 'path' | 'query' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  schema?: object;
}
interface RequestOperation {
  parameters?: Parameter[];
  security?: Record<string, string[]>[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: object }> };
}
interface RequestDocument {
  paths: Record<string, Record<string, RequestOperation & object> & { parameters?: Parameter[] }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** `/v1/api/imports/{id}` as a pattern of its segments, a parameter matching one non-empty segment. */
function templateMatch(template: string, path: string): Record<string, string> | undefined {
  const names: string[] = [];
  const source = template.split('/').map((segment) => {
    const parameter = /^\{(.+)\}$/.exec(segment);
    if (!parameter) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    names.push(parameter[1]!);
    return '([^/]+)';
  });
  const match = new RegExp(`^${source.join('/')}$`).exec(path);
  if (!match) return undefined;
  return Object.fromEntries(names.map((name, i) => [name, match[i + 1]!]));
}

const decoded = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Request validation as a validating gateway or proxy in front of the service does it (Prism's
 * validation mode, an API gateway's request validator): the operation is found by method and path
 * (a literal segment before a parameter, as OpenAPI says), then its path, query and header
 * parameters (their declared schemas, with the string of the URL or header read as the schema's
 * type), its security (an `Authorization` header when the operation asks for one), and its body
 * (a declared media type; the JSON parsed and held to the schema, a text body held as a string;
 * required when the document says so; none for an operation that declares none).
 * note: parameters the document does not declare are let through, as those tools do by default.
 */
export function requestValidator(doc: unknown) {
  const document = doc as RequestDocument;
  const ajv = documentValidator(doc);
  // note: a parameter arrives as text; `limit=20` is held to `type: integer` as a gateway reads it.
  const coercing = documentValidator(doc, { coerceTypes: true });
  const compiled = new Map<string, ReturnType<Ajv2020['compile']>>();
  const validatorOf = (ref: string, coerce: boolean) => {
    const key = `${coerce}:${ref}`;
    let validate = compiled.get(key);
    if (validate === undefined) {
      // note: wrapped in an object, where ajv can coerce a value in place
      validate = coerce ? coercing.compile({ type: 'object', properties: { value: { $ref: `openapi${ref}` } } }) : ajv.compile({ $ref: `openapi${ref}` });
      compiled.set(key, validate);
    }
    return validate;
  };
  const check = (ref: string, value: unknown, coerce = false): string | undefined => {
    const validate = validatorOf(ref, coerce);
    return validate(coerce ? { value } : value) ? undefined : JSON.stringify(validate.errors);
  };

  /** The operation a request is held to: a path with literal segments wins over one with a parameter. */
  function operationOf(method: string, path: string): { template: string; params: Record<string, string> } | undefined {
    const candidates = Object.keys(document.paths)
      .filter((template) => document.paths[template]![method] !== undefined)
      .map((template) => ({ template, params: templateMatch(template, path) }))
      .filter((candidate): candidate is { template: string; params: Record<string, string> } => candidate.params !== undefined)
      .sort((a, b) => Object.keys(a.params).length - Object.keys(b.params).length);
    return candidates[0];
  }

  /** What the document refuses of `request`, one line each; empty when it passes. */
  function problemsOf(request: SentRequest): string[] {
    const method = request.method.toLowerCase();
    if (!METHODS.includes(method)) return [`method ${request.method} is not one of OpenAPI's`];
    const target = new URL(request.url, 'http://gateway.test');
    const found = operationOf(method, target.pathname);
    if (found === undefined) return [`${request.method} ${target.pathname}: no operation of the document`];
    const { template, params } = found;
    const operation = document.paths[template]![method]!;
    const where = (...parts: string[]) => pointer('paths', template, method, ...parts);
    const problems: string[] = [];
    const headers = Object.fromEntries(Object.entries(request.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name.toLowerCase(), value]])));

    const parameters = [...(document.paths[template]!.parameters ?? []).map((p, i) => ({ p, ref: pointer('paths', template, 'parameters', String(i), 'schema') }))];
    (operation.parameters ?? []).forEach((p, i) => parameters.push({ p, ref: where('parameters', String(i), 'schema') }));
    for (const { p, ref } of parameters) {
      const values =
        p.in === 'path' ? (params[p.name] === undefined ? [] : [decoded(params[p.name]!)])
        : p.in === 'query' ? target.searchParams.getAll(p.name)
        : p.in === 'header' ? (headers[p.name.toLowerCase()] === undefined ? [] : [headers[p.name.toLowerCase()]!])
        : [];
      if (values.length === 0) {
        if (p.required) problems.push(`${p.in} parameter ${p.name}: required, not sent`);
        continue;
      }
      if (p.schema === undefined) continue;
      for (const value of values) {
        const problem = check(ref, value, true);
        if (problem !== undefined) problems.push(`${p.in} parameter ${p.name}=${JSON.stringify(value).slice(0, 80)}: ${problem}`);
      }
    }

    if ((operation.security ?? []).some((requirement) => Object.keys(requirement).length > 0) && !/^Bearer \S/.test(headers['authorization'] ?? '')) {
      problems.push('security: no bearer token in Authorization');
    }

    const body = request.body === undefined || request.body.length === 0 ? undefined : request.body;
    const declared = operation.requestBody;
    if (body === undefined) {
      if (declared?.required) problems.push('body: required, not sent');
      return problems;
    }
    if (declared === undefined) return [...problems, 'body: sent to an operation that declares none'];
    const mediaType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const media = declared.content[mediaType];
    if (media === undefined) return [...problems, `body: media type ${JSON.stringify(mediaType)} is not one of ${Object.keys(declared.content).join(', ')}`];
    if (media.schema === undefined) return problems;
    const text = Buffer.isBuffer(body) ? body.toString('utf8') : body;
    let value: unknown = text;
    if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
      try {
        value = JSON.parse(text);
      } catch {
        return [...problems, 'body: not JSON'];
      }
    }
    const problem = check(where('requestBody', 'content', mediaType, 'schema'), value);
    if (problem !== undefined) problems.push(`body: ${problem.slice(0, 600)}`);
    return problems;
  }

  return { operationOf, problemsOf };
}
