/** Small raw-HTTP helpers for the money/limits tests: requests, stream readers, the admin PATCH. */
import type { Harness } from "./harness";

export const messages = [{ role: "user", content: "hi" }];

export function chat(h: Harness | string, key: string, body: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  const base = typeof h === "string" ? h : h.base;
  return fetch(base + "/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "glm-4.6", messages, ...body }),
    signal,
  });
}

export function post(h: Harness, path: string, key: string, body: unknown): Promise<Response> {
  return fetch(h.base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Reads a stream until `predicate` holds on the text so far; returns the reader to continue or cancel. */
export async function readUntil(res: Response | ReadableStreamDefaultReader<Uint8Array>, predicate: (text: string) => boolean) {
  const reader = res instanceof Response ? res.body!.getReader() : res;
  const dec = new TextDecoder();
  let text = "";
  while (!predicate(text)) {
    const r = await reader.read();
    if (r.done) break;
    text += dec.decode(r.value, { stream: true });
  }
  return { reader, text };
}

/** Counts content chunks (data events with a non-empty delta.content) in SSE text. */
export function contentChunks(sse: string): string[] {
  const out: string[] = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const obj = JSON.parse(line.slice(6));
    const c = obj.choices?.[0]?.delta?.content;
    if (typeof c === "string" && c !== "") out.push(c);
  }
  return out;
}

export async function setLimits(h: Harness, accountId: string, limits: { rate_limit_rpm?: number | null; concurrency_limit?: number | null }) {
  const r = await h.admin("PATCH", `/admin/accounts/${accountId}`, limits);
  if (r.status !== 200) throw new Error(`PATCH failed: ${JSON.stringify(r.body)}`);
  return r.body;
}

export const rateHeaders = (res: Response) => ({
  limit: res.headers.get("x-ratelimit-limit-requests"),
  remaining: res.headers.get("x-ratelimit-remaining-requests"),
  reset: res.headers.get("x-ratelimit-reset-requests"),
});
