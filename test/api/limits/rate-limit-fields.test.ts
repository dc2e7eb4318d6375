import fc from 'fast-check';
import { serializeList, type Item } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import type { QuotaDecision, QuotaWindow } from '../../../src/api/limits/account-quota.js';
import { rateLimitFields } from '../../../src/api/limits/rate-limit-fields.js';

/** What structured-headers makes of the decision's `r` and `t`: the field as RFC 9651 writes it. */
function byTheLibrary({ minute, day }: QuotaDecision): string {
  const item = (name: string, w: QuotaWindow): Item => [name, new Map([['r', w.remaining], ['t', w.resetSec]])];
  return serializeList([item('minute', minute), item('day', day)]);
}

const window = (remaining: number, resetSec: number): QuotaWindow => ({ limit: 300, remaining, windowSec: 60, resetSec });

/** The RateLimit field is written out as text on the hot path; it must be what the library writes. */
describe('rateLimitFields', () => {
  it('writes the RateLimit field exactly as structured-headers does, for any whole numbers', () => {
    // note: RFC 9651 Integers have at most 15 digits
    const whole = fc.integer({ min: 0, max: 999_999_999_999_999 });
    fc.assert(
      fc.property(whole, whole, whole, whole, (minuteR, minuteT, dayR, dayT) => {
        const decision = { minute: window(minuteR, minuteT), day: window(dayR, dayT) };
        expect(rateLimitFields(decision).ratelimit).toBe(byTheLibrary(decision));
      }),
    );
  });

  it('leaves anything but whole numbers to the library: a fraction, a negative number', () => {
    for (const decision of [
      { minute: window(1.5, 60), day: window(10, 86_400) },
      { minute: window(10, 60), day: window(-1, 86_400) },
    ]) {
      expect(rateLimitFields(decision).ratelimit).toBe(byTheLibrary(decision));
    }
  });
});
