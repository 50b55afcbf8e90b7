/** Small raw-HTTP helpers for chat tests: a POST with a key, and an SSE body read into events. */

export async function postChat(base: string, key: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(base + "/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

/** The `data:` payloads of an SSE body, in order ("[DONE]" kept as a string). */
export async function sseEvents(res: Response): Promise<(Record<string, any> | string)[]> {
  const text = await res.text();
  const out: (Record<string, any> | string)[] = [];
  for (const block of text.split("\n\n")) {
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    if (!data) continue;
    out.push(data === "[DONE]" ? data : JSON.parse(data));
  }
  return out;
}

/** The concatenated `delta.content` of stream events. */
export function streamedText(events: (Record<string, any> | string)[]): string {
  return events.map((e) => (typeof e === "object" ? e.choices?.[0]?.delta?.content ?? "" : "")).join("");
}

export async function waitFor(cond: () => boolean, timeoutMs = 3_000): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) return false;
    await Bun.sleep(10);
  }
  return true;
}
