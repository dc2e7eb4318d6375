import { request } from 'node:http';

/** One piece of a body: bytes to send, or a pause (the client holding the connection, silent). */
export type BodyPiece = string | Buffer | { pauseMs: number };

export interface StreamedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** body bytes written when the answer's head arrived */
  sentAtAnswer: number;
  /** ms from the last byte written before the answer to the answer's head */
  answeredAfterLastByteMs: number;
  /** whether the whole body had been written when the answer came */
  bodyComplete: boolean;
  /** ms from the answer's head to the server closing the connection; undefined if it kept it open */
  closedAfterAnswerMs: number | undefined;
}

/**
 * Sends a request whose body is written piece by piece as the socket drains (never held whole),
 * pausing where a piece says so, and stops writing as soon as the answer arrives: what a client
 * that reads while it sends sees. Rejects only when the connection breaks before any answer.
 */
export function streamedUpload(url: string, headers: Record<string, string>, pieces: Iterable<BodyPiece>, { closeWaitMs = 5_000 } = {}): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers });
    let sent = 0;
    let lastByteAt = Date.now();
    let answered = false;
    let complete = false;
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.on('response', (res) => {
      answered = true;
      const answeredAt = Date.now();
      const sentAtAnswer = sent;
      const answeredAfterLastByteMs = answeredAt - lastByteAt;
      let body = '';
      let closedAfterAnswerMs: number | undefined;
      const socket = req.socket;
      const closeTimer = setTimeout(() => finish(), closeWaitMs);
      socket?.once('close', () => {
        closedAfterAnswerMs = Date.now() - answeredAt;
        if (ended) finish();
      });
      let ended = false;
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(closeTimer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sentAtAnswer, answeredAfterLastByteMs, bodyComplete: complete, closedAfterAnswerMs });
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('error', () => undefined);
      res.on('end', () => {
        ended = true;
        // note: a connection kept alive is not waited for past closeWaitMs
        if (closedAfterAnswerMs !== undefined || socket === null || socket.destroyed) finish();
      });
    });
    const iterator = pieces[Symbol.iterator]();
    const write = () => {
      for (;;) {
        if (answered || req.destroyed) return;
        const next = iterator.next();
        if (next.done) {
          complete = true;
          req.end();
          return;
        }
        const piece = next.value;
        if (typeof piece === 'object' && !Buffer.isBuffer(piece)) {
          setTimeout(write, piece.pauseMs);
          return;
        }
        sent += Buffer.byteLength(piece);
        lastByteAt = Date.now();
        if (!req.write(piece)) {
          req.once('drain', write);
          return;
        }
      }
    };
    write();
  });
}

/** `totalBytes` of `unit` repeated, in pieces of 64 KiB, made as they are sent. */
export function* repeatedBytes(unit: string, totalBytes: number): Generator<Buffer> {
  const piece = Buffer.from(unit.repeat(Math.ceil(65_536 / unit.length)));
  for (let sent = 0; sent < totalBytes; sent += piece.length) yield piece.subarray(0, Math.min(piece.length, totalBytes - sent));
}
