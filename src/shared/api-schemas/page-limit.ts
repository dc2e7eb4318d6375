import { z } from 'zod';
import { API_ERRORS } from '../errors/api-errors.js';
import { wholeNumberParameter } from './whole-number.js';

/**
 * A list's `limit` query parameter: a whole number from 1 to `max`, `fallback` when absent
 * (docs/endpoints.md). `what` names the items in the document's description. A value out of
 * range is refused 400 `invalid_limit` by the route (apiErrors.pageLimitMalformed).
 */
export function pageLimitSchema(max: number, fallback: number, what?: string) {
  return wholeNumberParameter(z.number({ error: API_ERRORS.pageLimitMalformed.text(max) }).int().min(1).max(max).default(fallback)).meta({
    description: `How many ${what === undefined ? '' : `${what} `}to return: 1 to ${max}, ${fallback} by default.`,
  });
}
