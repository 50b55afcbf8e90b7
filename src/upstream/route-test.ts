/**
 * The operator's "test this route" (README "Dashboard"): one tiny chat request sent straight to a
 * route's upstream — not through /v1, so it is not billed, counted against any account, or fed to
 * the route's circuit breaker — answering whether it worked, its HTTP status and how long it took.
 * The answer never names the upstream's address or echoes its body (which may carry anything).
 */
import { postChatCompletions, UpstreamFailure } from "./client";
import { readAllText } from "./timeouts";
import type { Route } from "./registry";

export const ROUTE_TEST_TIMEOUT_MS = 15_000;
const TEST_PROMPT = "Reply with the word ok.";

export interface RouteTestResult {
  ok: boolean;
  http_status: number | null;
  latency_ms: number;
  /** Why it failed, in words (connect, timeout, status), or null. */
  error: string | null;
  /** The first words of the answer, when it worked. */
  reply: string | null;
}

export async function testRoute(route: Route, timeoutMs = ROUTE_TEST_TIMEOUT_MS): Promise<RouteTestResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const body = { model: route.model, messages: [{ role: "user", content: TEST_PROMPT }], max_tokens: 5, stream: false };
  try {
    const reply = await postChatCompletions(route.upstream, body, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await readAllText(reply.body, 64 * 1024);
    let said: string | null = null;
    try {
      const content = JSON.parse(text)?.choices?.[0]?.message?.content;
      if (typeof content === "string") said = content.slice(0, 80);
    } catch {
      // not JSON: the status says it worked; there is just nothing to quote
    }
    return { ok: true, http_status: reply.status, latency_ms: elapsed(), error: null, reply: said };
  } catch (e) {
    const f = e instanceof UpstreamFailure ? e : null;
    const why = !f ? "the request failed"
      : f.kind === "status" ? `the upstream answered HTTP ${f.status}`
      : f.kind === "connect" ? "could not connect to the upstream"
      : f.kind === "timeout" || f.kind === "aborted" ? `no answer within ${Math.round(timeoutMs / 1000)} s`
      : "the route's configuration is not usable";
    return { ok: false, http_status: f?.kind === "status" ? f.status : null, latency_ms: elapsed(), error: why, reply: null };
  }
}
