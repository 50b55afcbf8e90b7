/**
 * An upstream response body as the HTTP/1.1 client hands it out (exchange.ts), and the reads of a
 * whole body: as text, or as text up to a bound past which reading stops.
 */

export type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array };

/** A body read chunk by chunk; `cancel` stops reading (an unfinished body closes its connection). */
export interface Body {
  read(): Promise<ReadResult>;
  cancel(reason?: unknown): Promise<void>;
  /**
   * Each read is a view of a buffer that nothing else reads (a socket read of its own), so a
   * reader may free that buffer once done with the view (see idle-reader.ts, readTransient).
   */
  readonly ownsReads?: boolean;
}

/** A body grew past the limit its reader set: reading stopped there and the connection closed. */
export class BodyTooLarge extends Error {}

/** Reads a whole body as text (a non-streamed upstream reply), or its first `limit` bytes or so. */
export async function readAllText(body: Body, limit = Infinity): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const r = await body.read();
    if (r.done) break;
    chunks.push(r.value);
    total += r.value.byteLength;
    if (total >= limit) {
      await body.cancel();
      break;
    }
  }
  return chunks.length === 1 ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, total).toString("utf8") : Buffer.concat(chunks, total).toString("utf8");
}

/**
 * Reads a whole body as text, up to `maxBytes`: a body that grows past it is cancelled as soon as
 * a read crosses the limit (its connection closes; at most one read past the limit is held) and
 * the read fails with BodyTooLarge.
 */
export async function readBoundedText(body: Body, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const r = await body.read();
    if (r.done) break;
    total += r.value.byteLength;
    if (total > maxBytes) {
      chunks.length = 0;
      await body.cancel();
      throw new BodyTooLarge(`body larger than ${maxBytes} bytes`);
    }
    chunks.push(r.value);
  }
  return chunks.length === 1 ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, total).toString("utf8") : Buffer.concat(chunks, total).toString("utf8");
}
