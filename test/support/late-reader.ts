/**
 * A client that reads late: it asks for `url`, takes nothing for `ms` (the socket's buffers fill
 * and the server has to keep what they do not take), then reads the whole body.
 */
export async function readLate(url: string, ms = 300): Promise<Buffer> {
  const res = await fetch(url);
  const reader = res.body!.getReader();
  await Bun.sleep(ms);
  const got: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) got.push(r.value!);
  return Buffer.concat(got);
}
