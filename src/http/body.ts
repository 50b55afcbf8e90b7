/**
 * Reads a request body as text, stopping as soon as it grows past the limit, so a chunked upload
 * without content-length can never make us buffer more than the limit before the 413.
 */
import { DomainError } from "../errors";

export function tooLarge(limit: number, length?: number): DomainError {
  return new DomainError(
    "too_large",
    "request_too_large",
    length === undefined
      ? `The request body is larger than the limit of ${limit} bytes.`
      : `The request body is ${length} bytes; the limit is ${limit} bytes.`,
  );
}

export async function readBodyCapped(request: Request, limit: number): Promise<string> {
  // A declared length was already checked against the limit (app.ts onRequest), and Bun stops
  // reading at the declared length: the native reader is safe there and faster.
  if (request.headers.get("content-length") !== null) return request.text();
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total).toString("utf8");
}
