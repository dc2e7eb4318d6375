import type { AddressInfo } from 'node:net';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentValidator, pointer } from '../support/openapi-validator.js';
import { rawRequest, requestHead, type RawReply, type RawRequestOptions } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/test-service.js';

interface Operation {
  responses: Record<string, { content?: Record<string, { examples?: Record<string, { value: { code?: string } }> }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

/** One operation of the served document, with a URL that reaches it. */
interface Target {
  path: string;
  method: string;
  url: (id: string) => string;
}

/** A request Node's parser or the router refuses before any route runs, whatever the route. */
interface Refusal {
  name: string;
  status: number;
  code: string;
  /** only operations with a path parameter can be reached by it */
  parameter?: boolean;
  request: (target: Target) => RawRequestOptions;
}

const REQUEST_TIMEOUT_MS = 1_000;
const ID = '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76';

const head = (target: Target, headers: Record<string, string> = {}, id = ID) => requestHead(target.method.toUpperCase(), target.url(id), headers);

const REFUSALS: Refusal[] = [
  { name: 'a NUL in a header value', status: 400, code: 'bad_request', request: (t) => ({ text: head(t, { 'x-note': 'a\u0000b' }) }) },
  { name: 'a Content-Length that is not a number', status: 400, code: 'bad_request', request: (t) => ({ text: head(t, { 'content-length': 'abc' }) }) },
  { name: 'headers over the limit', status: 431, code: 'headers_too_large', request: (t) => ({ text: head(t, { 'x-big': 'b'.repeat(20_000) }) }) },
  {
    name: 'headers that trickle in past REQUEST_TIMEOUT_MS',
    status: 408,
    code: 'request_timeout',
    request: (t) => ({
      text: head(t).slice(0, -2),
      trickle: Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: 1\r\n`),
      trickleEveryMs: 200,
      waitMs: 8_000,
    }),
  },
  { name: 'a path parameter that is not percent-encoding', status: 400, code: 'malformed_url', parameter: true, request: (t) => ({ text: head(t, {}, '%zz') }) },
  { name: 'a path parameter of 101 characters', status: 414, code: 'url_too_long', parameter: true, request: (t) => ({ text: head(t, {}, 'x'.repeat(101)) }) },
];

/**
 * Every status the HTTP parser and the router send to an operation's requests is one that
 * operation documents, with its body and code (docs/errors.md#framework-errors). note: they
 * answer before any route runs, so a validating gateway or a generated client meets them on every
 * operation; the operations are read from the served document, so a route added later is held to
 * the same.
 */
describe('the refusals sent before a route runs are in each operation\'s document', () => {
  let service: TestService;
  let port: number;
  let doc: Document;
  let ajv: Ajv2020;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), FILE_UPLOAD_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    port = (service.app.server.address() as AddressInfo).port;
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    ajv = documentValidator(doc);
  });
  afterAll(async () => {
    await service?.close();
  });

  const targets = (): Target[] =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => ({ path, method, url: (id: string) => path.replace(/\{[^}]+\}/, id) })));

  /** What does not hold of `reply` to `refusal` on `target`, one line each. */
  function problemsOf(target: Target, refusal: Refusal, reply: RawReply): string[] {
    const label = `${target.method.toUpperCase()} ${target.path} with ${refusal.name}: ${reply.status} ${reply.body.slice(0, 120)}`;
    if (reply.status !== refusal.status) return [`${label}: expected ${refusal.status}`];
    const response = doc.paths[target.path]![target.method]!.responses[String(reply.status)];
    if (response === undefined) return [`${label}: status not documented`];
    const problems: string[] = [];
    const validate = ajv.compile({ $ref: `openapi${pointer('paths', target.path, target.method, 'responses', String(reply.status), 'content', 'application/json', 'schema')}` });
    const body = JSON.parse(reply.body) as { code?: string };
    if (!validate(body)) problems.push(`${label}: body does not match: ${JSON.stringify(validate.errors)}`);
    const codes = Object.values(response.content?.['application/json']?.examples ?? {}).map((e) => e.value.code);
    if (!codes.includes(refusal.code)) problems.push(`${label}: code ${refusal.code} not among the examples`);
    if (reply.headers['x-request-id'] === undefined) problems.push(`${label}: no X-Request-Id`);
    return problems;
  }

  it('answers each refusal on every operation with a status, body and code the operation documents', async () => {
    const all = targets();
    expect(all.length).toBeGreaterThan(20);
    const cases = all.flatMap((target) => REFUSALS.filter((refusal) => refusal.parameter !== true || target.path.includes('{')).map((refusal) => ({ target, refusal })));
    expect(cases.filter(({ refusal }) => refusal.parameter === true).length).toBeGreaterThan(0);
    // note: all at once: the 408s each wait out the request timeout
    const replies = await Promise.all(cases.map(({ target, refusal }) => rawRequest(port, { waitMs: 5_000, ...refusal.request(target) })));
    expect(cases.flatMap(({ target, refusal }, i) => problemsOf(target, refusal, replies[i]!))).toEqual([]);
  });
});
