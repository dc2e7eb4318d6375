import type { FastifyInstance, RouteOptions } from 'fastify';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { onTakenSegment } from './taken-segments.js';

/** The order `Allow` lists methods in; any other method follows, alphabetically. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const byMethodOrder = (a: string, b: string) => {
  const rank = (method: string) => (METHOD_ORDER.includes(method) ? METHOD_ORDER.indexOf(method) : METHOD_ORDER.length);
  return rank(a) - rank(b) || a.localeCompare(b);
};

/**
 * A route's path as a pattern over request paths, as the router reads it: `:name` (with an
 * optional `(regex)`) is one segment, empty too (as find-my-way reads it), `*` is the rest of the path.
 */
function pathPattern(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+(?:\([^)]*\))?|\*)/)
    .map((piece) => (piece === '*' ? '.*' : piece.startsWith(':') ? '[^/]*' : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/** The request target's path as the router matches it: without the query, each segment decoded. */
function requestPath(url: string): string {
  const target = url.startsWith('/') ? url : url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, '');
  const end = target.search(/[?#]/);
  return (end === -1 ? target : target.slice(0, end))
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    })
    .join('/');
}

/**
 * A known path asked with a method it does not take answers 405 `Method not allowed` with
 * `Allow` listing the methods it takes (RFC 9110, 15.5.6), HEAD beside every GET as Fastify
 * exposes it; a path no route has stays 404. note: the router does not say which methods a path
 * takes, so the routes are collected as they are added (register this before them) and matched
 * here only for a request no route matched. An onRequest hook registered after the CORS check and
 * the lockout guard, so a refused origin still gets 403 and a locked-out address 429 under
 * `/v1/api/`, whatever the method. A catch-all route (`*`, the CORS preflight's OPTIONS) makes no
 * path known.
 */
export function registerMethodNotAllowed(app: FastifyInstance): void {
  const routes = new Map<string, { pattern: RegExp; methods: Set<string>; notItsPaths: Set<string> }>();
  const add = (url: string, methods: readonly string[], takenSegments: readonly string[] = []) => {
    const route = routes.get(url) ?? { pattern: pathPattern(url), methods: new Set<string>(), notItsPaths: new Set<string>() };
    for (const method of methods) route.methods.add(method);
    // note: the path with a taken segment in place of the route's parameter belongs to another route
    for (const segment of takenSegments) route.notItsPaths.add(url.replace(/:[A-Za-z0-9_]+/, segment));
    routes.set(url, route);
  };

  app.addHook('onRoute', (route: RouteOptions & { routePath?: string; prefix?: string }) => {
    if (route.url === '*' || route.url === '/*') return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    add(route.url, methods, route.config?.takenSegments);
    // note: a plugin's `/` under a prefix is also reachable with the prefix's trailing slash, a
    // route the router adds without telling onRoute.
    if (route.routePath === '' && route.prefix && route.prefixTrailingSlash !== 'no-slash') add(`${route.url}/`, methods);
  });

  app.addHook('onRequest', (request, _reply, done) => {
    if (!request.is404 && !onTakenSegment(request)) return done();
    const path = requestPath(request.url);
    const allowed = new Set<string>();
    for (const { pattern, methods, notItsPaths } of routes.values()) {
      if (pattern.test(path) && !notItsPaths.has(path)) for (const method of methods) allowed.add(method);
    }
    // note: a method the path takes that still reached no route (a spelling the router reads
    // otherwise) is answered as the router answered it: not found.
    if (allowed.size === 0 || allowed.has(request.method)) return done();
    done(apiErrors.methodNotAllowed([...allowed].sort(byMethodOrder)));
  });
}
