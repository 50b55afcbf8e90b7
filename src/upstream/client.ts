/**
 * HTTP to an upstream OpenAI-compatible server, with connect / first-byte timeouts and
 * classification of failures, so the caller can decide whether trying the next route is safe.
 * Nothing here formats client-facing text: upstream names and error bodies stay internal.
 */
import type { Route } from "./registry";

export type FailureKind = "connect" | "timeout" | "status" | "aborted";

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly status: number | null,
    /** Internal detail for logs only; never sent to a client. */
    readonly detail: string,
  ) {
    super(`${kind}${status ? ` ${status}` : ""}: ${detail}`);
  }

  /** Before the first byte, these may be retried on another route without any harm. */
  get retryable(): boolean {
    return this.kind === "connect" || this.kind === "timeout" || (this.kind === "status" && (this.status === 429 || (this.status ?? 0) >= 500));
  }
}

/**
 * POSTs a chat-completions body to the route. Resolves with the response once its status and
 * headers arrived and are 2xx; the body is then the caller's to read (and to abort via `signal`).
 */
export async function postChatCompletions(route: Route, body: unknown, signal: AbortSignal): Promise<Response> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), route.upstream.firstByteTimeoutMs);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (route.upstream.apiKey) headers.authorization = `Bearer ${route.upstream.apiKey}`;
  let res: Response;
  try {
    res = await fetch(`${route.upstream.baseUrl}/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout.signal]),
      // Streams are relayed chunk by chunk; never let the runtime buffer or decompress-join them.
      decompress: true,
    } as RequestInit);
  } catch (err) {
    if (signal.aborted) throw new UpstreamFailure("aborted", null, "client went away");
    if (timeout.signal.aborted) throw new UpstreamFailure("timeout", null, "no response headers in time");
    throw new UpstreamFailure("connect", null, (err as Error).message);
  } finally {
    clearTimeout(timer);
  }
  if (!res.ok) {
    const text = await res.text().catch(() => "");
    throw new UpstreamFailure("status", res.status, text.slice(0, 500));
  }
  return res;
}
