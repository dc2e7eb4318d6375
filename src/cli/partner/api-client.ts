/** What one HTTP attempt came back with. */
export type AttemptResult =
  | { type: 'response'; status: number; body: unknown; headers: Headers; sentAt: number }
  /**
   * No HTTP reply. `delivered: false` when the connection was never made (refused, DNS), so
   * the server cannot have seen the request; otherwise it may have, and the outcome is unknown.
   */
  | { type: 'network'; delivered: boolean; message: string };

// note: errors raised before any byte could reach the server; anything else may come after.
const NOT_DELIVERED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function describeNetworkError(error: unknown): { delivered: boolean; message: string } {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { delivered: true, message: 'no reply before the request timeout' };
  }
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const code = cause?.code;
  const message = [error instanceof Error ? error.message : String(error), cause?.message ?? code].filter(Boolean).join(': ');
  return { delivered: code === undefined || !NOT_DELIVERED_CODES.has(code), message };
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /** per request, in milliseconds */
  timeoutMs: number;
  userAgent: string;
}

/** The bulk endpoints of the API, one attempt per call; never throws. */
export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  /** One attempt; `dryRun` sends it as a server dry run (`?dry_run=true`), which writes nothing. */
  async postBulk(kind: string, body: string, idempotencyKey: string | undefined, dryRun = false): Promise<AttemptResult> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      'content-type': 'application/json',
      'user-agent': this.options.userAgent,
    };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const sentAt = Date.now();
    try {
      const res = await fetch(new URL(`v1/api/${kind}/bulk${dryRun ? '?dry_run=true' : ''}`, this.base()), {
        method: 'POST',
        headers,
        body,
        // note: a redirect is answered, never followed: following it would send the key and the
        // rows to wherever the Location points, and count that server's 201 as an import.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text) as unknown;
      } catch {
        // note: a proxy's HTML error page; the status decides what happens next.
      }
      return { type: 'response', status: res.status, body: parsed, headers: res.headers, sentAt };
    } catch (error) {
      return { type: 'network', ...describeNetworkError(error) };
    }
  }

  private base(): URL {
    const url = new URL(this.options.baseUrl);
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    return url;
  }
}
