import { MAX_REPLY_BYTES, type AttemptResult } from '@bulk-import/client';
import { serverText } from './printable.js';

export const MAX_REPLY_MIB = MAX_REPLY_BYTES / 2 ** 20;

/** The server's error text of a reply, bounded and printable (serverText). */
export function errorText(reply: Extract<AttemptResult, { type: 'response' }>): string {
  const { body } = reply;
  if (reply.tooLarge) return `(a reply larger than ${MAX_REPLY_MIB} MiB, not read)`;
  if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string') {
    return serverText((body as { error: string }).error);
  }
  return typeof body === 'string' && body.length > 0 ? serverText(body, 200) : 'no error message';
}
