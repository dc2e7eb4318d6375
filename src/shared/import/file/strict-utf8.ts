import { Transform, type TransformCallback } from 'node:stream';
import { FileNotUtf8Error } from './file-read-error.js';

/** Decodes strict UTF-8 as the bytes pass: a malformed sequence stops the file (FileNotUtf8Error). */
export class StrictUtf8 extends Transform {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  constructor() {
    super({ decodeStrings: true });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      done(null, this.decoder.decode(chunk, { stream: true }));
    } catch {
      done(new FileNotUtf8Error());
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      done(null, this.decoder.decode());
    } catch {
      done(new FileNotUtf8Error());
    }
  }
}
