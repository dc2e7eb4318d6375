import { request } from 'node:http';

/**
 * A listing of about 225 bytes, as one NDJSON line, numbered: `Lamp <n>`, with the external_id
 * `SKU-<n>` unless `externalId` is false (a row matched on nothing: written twice, it shows twice).
 */
export const listingLine = (n: number, { currency = 'USD', externalId = true }: { currency?: string; externalId?: boolean } = {}): string =>
  `{${externalId ? `"external_id":"SKU-${n}",` : ''}"title":"Lamp ${n}","description":"A fine print, checked by hand.","price_cents":1200,"currency":"${currency}","category":"home_decor","material":"PLA","photo_urls":["https://cdn.example.test/${n}.jpg"]}\n`;

export interface NdjsonUploadOptions {
  idempotencyKey?: string;
  /** called after each write with the bytes sent so far; it may stop the upload (kill the API, say) */
  onSent?: (bytes: number) => void;
  /** line `n` of the file (listingLine by default) */
  line?: (n: number) => string;
}

/**
 * Streams a file of `rows` lines to POST /v1/api/imports?kind=listings, written as the socket
 * drains, never held whole. Resolves with the status and body, or rejects when the connection
 * breaks.
 */
export function uploadNdjson(baseUrl: string, key: string, rows: number, options: NdjsonUploadOptions = {}): Promise<{ status: number; body: string }> {
  const line = options.line ?? listingLine;
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/v1/api/imports?kind=listings`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/x-ndjson',
        ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    let n = 0;
    let sent = 0;
    const write = () => {
      while (n < rows) {
        let chunk = '';
        for (let i = 0; i < 500 && n < rows; i += 1, n += 1) chunk += line(n);
        sent += Buffer.byteLength(chunk);
        const more = req.write(chunk);
        options.onSent?.(sent);
        if (!more) {
          req.once('drain', write);
          return;
        }
      }
      req.end();
    };
    write();
  });
}
