/**
 * The body as text, read as it arrives; undefined once it passes `maxBytes`, by its
 * Content-Length or by the bytes counted, with the connection closed (`abandon`) so that the
 * rest is neither buffered nor waited for.
 */
export async function readAtMost(res: Response, maxBytes: number, abandon: () => void): Promise<string | undefined> {
  const announced = Number(res.headers.get('content-length') ?? 0);
  const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = res.body?.getReader();
  if (reader === undefined) return '';
  if (announced > maxBytes) {
    abandon();
    await reader.cancel().catch(() => undefined);
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      abandon();
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  // note: TextDecoder drops a UTF-8 BOM, as Response.text() does.
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}
