// note: errors raised before any byte could reach the server; anything else may come after.
const NOT_DELIVERED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * What a failed fetch means for the request: `delivered: false` only when the connection was
 * never made (refused, DNS), so the server cannot have seen it; a timeout or a dropped connection
 * may come after the server read it, so its outcome is unknown.
 */
export function describeNetworkFailure(error: unknown): { delivered: boolean; message: string } {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { delivered: true, message: 'no reply before the request timeout' };
  }
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const code = cause?.code;
  const message = [error instanceof Error ? error.message : String(error), cause?.message ?? code].filter(Boolean).join(': ');
  return { delivered: code === undefined || !NOT_DELIVERED_CODES.has(code), message };
}
