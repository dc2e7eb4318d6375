// Loaded with `node --import`, after tsx (whose resolver would otherwise go around it): for that
// process `pino-pretty` cannot be found, as in the production image (`npm ci --omit=dev`), while
// the package stays installed for everyone else.
import Module from 'node:module';

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'pino-pretty') {
    throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolveFilename.call(this, request, ...rest);
};
