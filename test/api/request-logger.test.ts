import { describe, expect, it, vi } from 'vitest';
import { RequestLogger, requestLoggerFactory } from '../../src/api/plugins/request-logger.js';
import { createLogger, type Logger } from '../../src/shared/infra/logger.js';

function service(level: string): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ logLevel: level as 'info' }, 'api', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines };
}

describe('RequestLogger', () => {
  it('writes every line of the request with its request id, as a pino child would', () => {
    const { log, lines } = service('info');
    const request = new RequestLogger(log, { requestId: 'r-1' });
    request.info({ route: '/v1/api/me' }, 'request completed');
    request.warn('import outcome unknown');
    request.child({ importId: 'i-1' }).info('job added');
    expect(lines.map(({ requestId, msg, importId }) => ({ requestId, msg, importId }))).toEqual([
      { requestId: 'r-1', msg: 'request completed', importId: undefined },
      { requestId: 'r-1', msg: 'import outcome unknown', importId: undefined },
      { requestId: 'r-1', msg: 'job added', importId: 'i-1' },
    ]);
    expect(lines[0]).toMatchObject({ level: 30, name: 'api', route: '/v1/api/me' });
  });

  it('builds no child for a request whose lines are all below the level, and writes none of them', () => {
    const { log, lines } = service('warn');
    const child = vi.spyOn(log, 'child');
    const request = new RequestLogger(log, { requestId: 'r-2' });
    request.info({ route: '/v1/api/me' }, 'request completed');
    request.debug('detail');
    expect(request.isLevelEnabled('info')).toBe(false);
    expect(request.level).toBe('warn');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
    request.error({ err: new Error('boom') }, 'failed');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toEqual([expect.objectContaining({ requestId: 'r-2', level: 50, msg: 'failed' })]);
  });

  it('follows a level set on the request: its own lines only', () => {
    const { log, lines } = service('warn');
    const request = new RequestLogger(log, { requestId: 'r-3' });
    request.level = 'debug';
    request.debug('now written');
    log.debug('the service logger keeps its level');
    expect(lines.map((line) => line.msg)).toEqual(['now written']);
  });

  it('is what Fastify gets per request, unless it asks for options of its own (a route logLevel)', () => {
    const { log } = service('info');
    expect(requestLoggerFactory(log, { requestId: 'r-4' }, {})).toBeInstanceOf(RequestLogger);
    expect(requestLoggerFactory(log, { requestId: 'r-4' }, { level: 'debug' })).not.toBeInstanceOf(RequestLogger);
  });
});
