/**
 * An answer of the expected status that cannot be used: larger than the reply limit (abandoned
 * unread) or not of the documented shape. note: for an import the rows may have been written:
 * look the import up (listImports) before sending them again without the same key.
 */
export class ReplyError extends Error {
  override readonly name = 'ReplyError';

  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
