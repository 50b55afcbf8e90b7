/**
 * One speech request as the speech benchmarks time it: from the request to its first audio byte
 * and to its last, with the whole body.
 */
export interface TimedSpeech {
  ttfbMs: number;
  totalMs: number;
  bytes: Uint8Array;
}

export async function timedSpeech(base: string, key: string, request: Record<string, unknown>): Promise<TimedSpeech> {
  const t0 = performance.now();
  const res = await fetch(base + "/v1/audio/speech", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  if (res.status !== 200) throw new Error(`speech (${String(request.response_format)}): HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  let ttfb = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (value.length > 0 && ttfb === 0) ttfb = performance.now() - t0;
    parts.push(value);
  }
  return { ttfbMs: ttfb, totalMs: performance.now() - t0, bytes: Buffer.concat(parts) };
}
