import { connect } from 'node:net';
import { requestHead } from '../../test/support/raw-http.js';

/** Where a client hangs up: the three moments a partner's connection can drop during an import. */
export const HANG_UP_MOMENTS = ['after-headers', 'mid-body', 'after-body'] as const;
export type HangUpMoment = (typeof HANG_UP_MOMENTS)[number];

export interface HangUpRequest {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  moment: HangUpMoment;
  /** close with a reset (RST), as a dropped network path or an aborted socket does, rather than a FIN */
  reset: boolean;
  random?: () => number;
}

/** What came of it: the hang-up happened, or the whole answer arrived first (then it counts as one). */
export type HangUpOutcome =
  | { hungUp: true }
  | { hungUp: false; status: number; headers: Record<string, string>; body: string }
  | { hungUp: false; error: string };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A complete HTTP/1.1 answer in `bytes`, or undefined while it is still arriving. */
export function completeAnswer(bytes: Buffer): { status: number; headers: Record<string, string>; body: string } | undefined {
  const split = bytes.indexOf('\r\n\r\n');
  if (split === -1) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, split).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (bytes.length - split - 4 < length) return undefined;
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]), headers, body: bytes.subarray(split + 4, split + 4 + length).toString('utf8') };
}

/**
 * Sends an import over a socket of its own and closes it at `moment`: right after the headers
 * (while the API checks the key and takes an in-flight slot), in the middle of the body, or
 * after the whole body before the answer (while the import runs), with a FIN or a reset. A few milliseconds of jitter
 * spread the close over the server's steps around that moment.
 *
 * note: a plain socket, not an HTTP client: a client library would not close a request at a
 * chosen byte, and may retry on its own.
 */
export async function sendAndHangUp(request: HangUpRequest): Promise<HangUpOutcome> {
  const random = request.random ?? Math.random;
  const body = Buffer.from(request.body);
  const head = requestHead('POST', request.path, request.headers, body.length);
  const socket = connect(request.port, '127.0.0.1');
  const received: Buffer[] = [];
  let answer: ReturnType<typeof completeAnswer>;
  socket.on('data', (chunk: Buffer) => {
    received.push(chunk);
    answer ??= completeAnswer(Buffer.concat(received));
  });
  socket.on('error', () => undefined);
  const write = (data: string | Buffer) =>
    new Promise<void>((resolve) => {
      if (socket.destroyed) return resolve();
      socket.write(data, () => resolve());
    });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (error) {
    socket.destroy();
    return { hungUp: false, error: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
  if (request.moment === 'after-headers') {
    await write(head);
    await pause(random() * 3);
  } else if (request.moment === 'mid-body') {
    const cut = 1 + Math.floor(random() * (body.length - 1));
    await write(Buffer.concat([Buffer.from(head), body.subarray(0, cut)]));
    await pause(random() * 3);
  } else {
    await write(Buffer.concat([Buffer.from(head), body]));
    // note: an import takes tens of milliseconds; most of these close before its answer.
    await pause(random() * 30);
  }
  // note: a FIN lets the server finish reading and answer into the void; a reset tells it at once
  // that the client is gone, while it may still be checking the key or taking the slot.
  if (request.reset) socket.resetAndDestroy();
  else socket.destroy();
  if (answer !== undefined) return { hungUp: false, ...answer };
  // note: an error on a socket we closed ourselves (a reset once the server saw the close) is
  // part of the hang-up, not a failure of the connection.
  return { hungUp: true };
}
