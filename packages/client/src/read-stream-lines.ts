/**
 * The lines of a streamed body, read as they arrive: a line held at most, bounded by `maxLineBytes`
 * (ReplyError-worthy past it, thrown as `tooLong`), each wait for more bounded by `idleMs`. A body
 * that does not end with a line break was cut short: `cut` is thrown, never a last partial line.
 * note: the caller's loop ending early (a `break`) cancels the body, which closes the connection.
 */
export async function* readStreamLines(
  body: ReadableStream<Uint8Array>,
  bounds: { maxLineBytes: number; idleMs: number },
  errors: { tooLong: () => Error; cut: (cause: unknown) => Error },
): AsyncGenerator<string, void, undefined> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`nothing came for ${bounds.idleMs} ms`)), bounds.idleMs);
      });
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await Promise.race([reader.read(), idle]);
      } catch (error) {
        throw errors.cut(error);
      } finally {
        clearTimeout(timer);
      }
      if (next.done) break;
      const lines = (rest + next.value).split('\n');
      rest = lines.pop()!;
      if (rest.length > bounds.maxLineBytes) throw errors.tooLong();
      for (const line of lines) if (line !== '') yield line;
    }
    if (rest !== '') throw errors.cut(new Error('the body ended inside a line'));
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
