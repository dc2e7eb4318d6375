import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_OPTIONS, sendUntilSettled, type AttemptResult, type CallRules, type RetryEvent, type RetryOutcome } from '@bulk-import/client';

const answer = (status: number, headers: Record<string, string> = {}): AttemptResult => ({ type: 'response', status, body: {}, headers: new Headers(headers), sentAt: 0, tooLarge: false });
const dropped: AttemptResult = { type: 'network', delivered: true, message: 'other side closed' };

/** Sends the scripted attempts in order by the rule, on a clock that only sleeps move. */
async function settle<Found = never>(script: AttemptResult[], rules: CallRules<Found>, maxAttempts = 3): Promise<{ outcome: RetryOutcome<Found>; events: RetryEvent[]; sent: number }> {
  let clock = 0;
  let sent = 0;
  const events: RetryEvent[] = [];
  const options = { ...DEFAULT_RETRY_OPTIONS, maxAttempts, random: () => 0.5, now: () => clock, sleep: async (ms: number) => void (clock += ms), onRetry: (event: RetryEvent) => void events.push(event) };
  const outcome = await sendUntilSettled(async () => script[sent++] ?? answer(201), options, rules);
  return { outcome, events, sent };
}

/**
 * sendUntilSettled's options, which the partner CLI's policy is made of (packages/client/README.md#your-own-retry-rules):
 * the helpers' defaults are held by transport.test.ts and partner-path.test.ts.
 */
describe('sendUntilSettled', () => {
  it("waits: 'as-asked' waits a 429 out as it asks (5 s when it does not say), using up no attempt", async () => {
    const { outcome, events } = await settle([answer(429, { 'retry-after': '2' }), answer(429), answer(429), answer(201)], { idempotent: true, waits: 'as-asked' }, 1);
    expect(outcome).toMatchObject({ type: 'answered', reply: { status: 201 } });
    expect(events.map((event) => [event.kind, event.delayMs])).toEqual([['rate-limited', 2_000], ['rate-limited', 5_000], ['rate-limited', 5_000]]);
  });

  it('expected: any other 2xx or 5xx is an unknown outcome, retried only when idempotent', async () => {
    const retried = await settle([answer(200), answer(501), answer(201)], { idempotent: true, expected: [201] });
    expect(retried.outcome).toMatchObject({ type: 'answered', reply: { status: 201 }, mayHaveWritten: true });
    const kept = await settle([dropped, answer(200)], { idempotent: false, expected: [201] });
    expect(kept.outcome).toMatchObject({ type: 'stopped', cause: 'not-idempotent', reason: 'other side closed', mayHaveWritten: true });
    expect(kept.sent).toBe(1);
  });

  it('maxRetryTimeMs: the wait that would end past it stops the call, saying how long it kept at it', async () => {
    const storm = Array.from({ length: 9 }, () => answer(503, { 'retry-after': '4' }));
    const { outcome, sent } = await settle(storm, { idempotent: true, maxRetryTimeMs: 10_000 }, 100);
    expect(outcome).toMatchObject({ type: 'stopped', cause: 'out-of-time', waitMs: 4_000, allowedMs: 2_000, spentMs: 8_000, attempts: 3, reason: 'answered 503' });
    expect(sent).toBe(3);
  });

  it('lookUp: what it finds ends the call; its proof that nothing was written sends again as after a 503', async () => {
    const found = await settle([answer(504)], { idempotent: true, lookUp: async () => ({ type: 'found', found: 'its counts' }) });
    expect(found.outcome).toEqual({ type: 'found', found: 'its counts' });
    const cleared = await settle([answer(504), answer(201)], { idempotent: false, lookUp: async (_reply, call) => ({ type: 'nothing-written', reason: `${call.reason}, then failed` }) });
    expect(cleared.outcome).toMatchObject({ type: 'answered', reply: { status: 201 }, mayHaveWritten: false });
    expect(cleared.events).toMatchObject([{ kind: 'retry', attempt: 1, reason: 'answered 504, then failed' }]);
  });
});
