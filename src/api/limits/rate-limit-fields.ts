import { serializeList, type Item } from 'structured-headers';
import type { QuotaDecision, QuotaWindow } from './account-quota.js';

/** The quota policies, in the order both fields list them; each name is sent as it is spelt here. */
const POLICIES = ['minute', 'day'] as const satisfies readonly (keyof QuotaDecision)[];

function policyItems(decision: QuotaDecision, parameters: (window: QuotaWindow) => [string, number][]): Item[] {
  return POLICIES.map((name) => [name, new Map(parameters(decision[name]))]);
}

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-10 for a
 * quota decision (docs/access.md#ratelimit-and-ratelimit-policy): lists of RFC 9651 structured
 * fields whose items are the policy names as Strings, e.g.
 * `"minute";q=300;w=60, "day";q=100000;w=86400` and `"minute";r=299;t=60, "day";r=99999;t=86400`.
 * note: `r` and `t` are those of the `X-RateLimit-Remaining-*` headers and of `Retry-After`, taken
 * when the request was counted; an answer sent later (a long import) overstates `t` by that much,
 * which only makes a client wait longer.
 */
export function rateLimitFields(decision: QuotaDecision): { 'ratelimit-policy': string; ratelimit: string } {
  return { 'ratelimit-policy': policyField(decision), ratelimit: rateLimitField(decision) };
}

const isWholeNumber = (value: number) => Number.isSafeInteger(value) && value >= 0;

/**
 * The `RateLimit` field. note: written out when `r` and `t` are whole numbers (always, from
 * AccountQuota): with the names fixed Strings, that is all RFC 9651 asks of the text, and the
 * tests hold it to structured-headers' own output for any such numbers. Built through the library,
 * it was 3 % of the CPU of a `GET /v1/api/me`, on every API-key answer; anything else still is.
 */
function rateLimitField(decision: QuotaDecision): string {
  const { minute, day } = decision;
  if (isWholeNumber(minute.remaining) && isWholeNumber(minute.resetSec) && isWholeNumber(day.remaining) && isWholeNumber(day.resetSec)) {
    return `"minute";r=${minute.remaining};t=${minute.resetSec}, "day";r=${day.remaining};t=${day.resetSec}`;
  }
  return serializeList(policyItems(decision, (w) => [['r', w.remaining], ['t', w.resetSec]]));
}

/** note: a tier's policy never changes, so each is serialized once (it is on every API-key answer). */
const policies = new Map<string, string>();

function policyField(decision: QuotaDecision): string {
  const key = `${decision.minute.limit}/${decision.minute.windowSec}/${decision.day.limit}/${decision.day.windowSec}`;
  let field = policies.get(key);
  if (field === undefined) {
    field = serializeList(policyItems(decision, (w) => [['q', w.limit], ['w', w.windowSec]]));
    policies.set(key, field);
  }
  return field;
}
