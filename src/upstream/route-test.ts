/**
 * "Test this route" for the operator (POST /admin/routes/test, `switchyard routes test`, the
 * dashboard's models page): sends a
 * tiny, unbilled chat request through one configured route directly — no breaker, no retry, no
 * hold — and reports its status, latency and the answer's first words. The upstream's name is
 * the operator's own; its key never appears, and an error body is summarised, not relayed.
 */
import { postChatCompletions, UpstreamFailure } from "./client";
import { readAllText } from "./http1/body";
import type { Route } from "./registry";

export interface RouteTestResult {
  index: number;
  upstream: string;
  upstream_model: string;
  ok: boolean;
  /** The upstream's HTTP status, or null when none came (connect failure, timeout). */
  status: number | null;
  latency_ms: number;
  /** The first words of the answer (at most 12 words, 200 characters). */
  first_words: string | null;
  /** Why it failed: "connect", "timeout", "status 401", "not a chat completion", ... */
  error: string | null;
}

const PROMPT = "Reply with one short sentence: are you there?";
/** The whole test, connect to answer; past it the test says "timeout". */
export const ROUTE_TEST_TIMEOUT_MS = 15_000;
const ANSWER_BYTES = 64 * 1024;

function firstWords(text: string): string {
  return text.trim().split(/\s+/).slice(0, 12).join(" ").slice(0, 200);
}

export async function testRoute(route: Route, index: number, timeoutMs = ROUTE_TEST_TIMEOUT_MS): Promise<RouteTestResult> {
  const base = { index, upstream: route.upstream.name, upstream_model: route.model };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const reply = await postChatCompletions(route.upstream, { model: route.model, messages: [{ role: "user", content: PROMPT }], max_tokens: 16, stream: false }, { signal: controller.signal });
    const text = await readAllText(reply.body, ANSWER_BYTES);
    const latency = elapsed();
    let content: unknown;
    try {
      const json = JSON.parse(text) as { choices?: { message?: { content?: unknown; reasoning_content?: unknown } }[] };
      content = json.choices?.[0]?.message?.content ?? json.choices?.[0]?.message?.reasoning_content;
    } catch {
      return { ...base, ok: false, status: reply.status, latency_ms: latency, first_words: null, error: "not a chat completion (the answer is not JSON)" };
    }
    if (typeof content !== "string") return { ...base, ok: false, status: reply.status, latency_ms: latency, first_words: null, error: "not a chat completion (no choices[0].message.content)" };
    return { ...base, ok: true, status: reply.status, latency_ms: latency, first_words: firstWords(content), error: null };
  } catch (e) {
    const latency = elapsed();
    if (e instanceof UpstreamFailure) {
      return { ...base, ok: false, status: e.status, latency_ms: latency, first_words: null, error: e.kind === "status" ? `status ${e.status}` : e.kind === "aborted" ? "timeout" : e.kind };
    }
    return { ...base, ok: false, status: null, latency_ms: latency, first_words: null, error: "failed" };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
