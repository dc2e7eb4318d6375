/**
 * The file cannot be read on (a syntax error, a CSV header naming no field, an I/O error): its
 * reader stops here, after the rows it has already yielded.
 */
export class FileReadError extends Error {}

/** The file's bytes are not UTF-8 text: its reader stops here. */
export class FileNotUtf8Error extends FileReadError {
  constructor() {
    super('the file is not UTF-8 text');
  }
}

/** A CSV record longer than the bound of a row: the file cannot be read on past it. */
export class FileRecordTooLongError extends FileReadError {
  constructor(
    readonly maxBytes: number,
    readonly line: number,
  ) {
    super(`a CSV record longer than ${maxBytes} bytes starts on line ${line}`);
  }
}
