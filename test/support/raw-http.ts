import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** when the server closed the connection, ms after the request started; undefined if it did not within the wait */
  closedAfterMs: number | undefined;
}

export interface RawRequestOptions {
  /** the request head and body, sent as written: nothing normalises the target or the headers */
  text: string;
  /** written after `text`, one piece every `trickleEveryMs` (a slow or hostile client) */
  trickle?: string[];
  trickleEveryMs?: number;
  /** how long to wait for the server to close the connection */
  waitMs?: number;
}

function parse(text: string): Pick<RawReply, 'status' | 'headers' | 'body'> {
  const split = text.indexOf('\r\n\r\n');
  const head = split === -1 ? text : text.slice(0, split);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]), headers, body: split === -1 ? '' : text.slice(split + 4) };
}

/** Sends one HTTP/1.1 request over a plain socket and reads until the server closes it or `waitMs` passes. */
export function rawRequest(port: number, options: RawRequestOptions): Promise<RawReply> {
  const { text, trickle = [], trickleEveryMs = 100, waitMs = 10_000 } = options;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket: Socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(dripping);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks).toString('utf8')), closedAfterMs: closed ? Date.now() - started : undefined });
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    const timer = setTimeout(() => finish(false), waitMs);
    socket.write(text);
    const pieces = [...trickle];
    const dripping = setInterval(() => {
      const piece = pieces.shift();
      if (piece === undefined || socket.destroyed) return clearInterval(dripping);
      socket.write(piece);
    }, trickleEveryMs);
  });
}

/** A request head: method, target, Host, the given headers, and a Content-Length when a body is given. */
export function requestHead(method: string, target: string, headers: Record<string, string> = {}, contentLength?: number): string {
  const lines = [
    `${method} ${target} HTTP/1.1`,
    'Host: api.example.test',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ...(contentLength === undefined ? [] : [`Content-Length: ${contentLength}`]),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
