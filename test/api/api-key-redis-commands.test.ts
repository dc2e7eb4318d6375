import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from 'ioredis';
import { HOT_AFTER } from '../../src/api/limits/quota-leases.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * What one API-key request costs in Redis (docs/access.md#order-of-checks): a cached key's
 * request is one command, the script that reads its lockout and auth version and counts its quota,
 * or, once this process holds a share of the account's quota, one MGET of the lockout and the
 * version. Either way the auth version is read after the request arrived, so a revocation bites
 * on the very next request.
 */
describe('GET /v1/api/me: Redis commands of an API-key request', () => {
  let service: TestService;
  let account: TestAccount;
  /** the names of the commands the API sent, while `recording` */
  const sent: string[] = [];
  let recording = false;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    const redis = service.deps.redis;
    const sendCommand = redis.sendCommand.bind(redis) as (command: Command, ...rest: unknown[]) => unknown;
    (redis as unknown as { sendCommand: typeof sendCommand }).sendCommand = (command, ...rest) => {
      if (recording) sent.push(command.name);
      return sendCommand(command, ...rest);
    };
  });
  afterAll(async () => {
    await service?.close();
  });

  /** The commands one request sent, and its answer. */
  async function commandsOf(key: string, remoteAddress = '203.0.113.10') {
    sent.length = 0;
    recording = true;
    try {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress });
      return { status: res.statusCode, commands: [...sent] };
    } finally {
      recording = false;
    }
  }

  beforeAll(async () => {
    account = await service.createAccount({ tier: 'global' });
    // note: without the database's notifications, a revocation reaches this process's cached key
    // only through the auth version in Redis, as it reaches a replica whose notification is late.
    await service.deps.authChanges.stop();
  });

  it('costs a cached key one command: the quota counted behind the lockout and the auth version', async () => {
    const key = await service.createKey(account, ['listings:write'], 'commands');
    // note: the first request loads the key; the second runs the script once, which may be new
    // to the server (EVALSHA, then EVAL).
    for (let i = 0; i < 2; i += 1) expect((await commandsOf(key)).status).toBe(200);
    expect(await commandsOf(key)).toEqual({ status: 200, commands: ['evalsha'] });
  });

  it('costs a request spending this process\'s share of the quota one MGET, and every other one script', async () => {
    const other = await service.createAccount({ tier: 'global' });
    const key = await service.createKey(other, ['listings:write'], 'shares');
    for (let i = 0; i < 2; i += 1) await commandsOf(key);
    const costs = [];
    for (let i = 0; i < HOT_AFTER * 3; i += 1) costs.push(await commandsOf(key));
    expect(costs.every((cost) => cost.status === 200)).toBe(true);
    for (const { commands } of costs) expect([['evalsha'], ['mget']]).toContainEqual(commands);
    expect(costs.filter(({ commands }) => commands[0] === 'mget').length).toBeGreaterThan(HOT_AFTER);
  });

  it.each([
    { path: 'counted in Redis', requestsBefore: 2, read: 'evalsha' },
    { path: 'counted from a share held here', requestsBefore: HOT_AFTER * 2, read: 'mget' },
  ])('refuses a key revoked after it was cached on the very next request, $path', async ({ requestsBefore, read }) => {
    const owner = await service.createAccount({ tier: 'global' });
    const key = await service.createKey(owner, ['listings:write'], 'to revoke');
    let last;
    for (let i = 0; i < requestsBefore; i += 1) last = await commandsOf(key);
    expect(last?.status).toBe(200);
    const listed = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(owner.sessionToken) });
    const { id } = listed.json<{ keys: { id: string }[] }>().keys[0]!;
    expect((await service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: bearer(owner.sessionToken) })).statusCode).toBe(200);
    const refused = await commandsOf(key, '203.0.113.77');
    expect(refused.status).toBe(401);
    // the auth version was read by the command of the path named
    expect(refused.commands[0]).toBe(read);
  });
});
