/**
 * An OpenAI-compatible upstream that replays exactly what a test scripts: one chat message
 * (with reasoning, tool calls, a finish reason, a matched stop string) for plain requests, and
 * the same message split into chunks for streams. For shapes the shared fake upstream does not
 * produce (reasoning_content, finish_reason "length", vLLM's `stop_reason`, usage details).
 * A script may be a function of the request body, for multi-step agent runs (a tool call first,
 * the final answer once the tool's result is in the conversation).
 */
import { enc, serveLoopback, sseFrame, sseResponse, SSE_DONE } from "./loopback-server";

export interface Script {
  reasoning?: string;
  content?: string;
  toolCalls?: { name: string; arguments: string }[];
  /** Stream parallel tool calls as some engines do: every call opens, then their argument pieces alternate. */
  interleaveToolCalls?: boolean;
  finishReason?: string;
  /** vLLM names the stop string that ended generation. */
  stopReason?: string | null;
  /** Text sent after the tool calls' arguments (some engines emit content after them). */
  trailingContent?: string;
  promptTokens?: number;
  completionTokens?: number;
  /** usage.prompt_tokens_details.cached_tokens */
  cachedTokens?: number;
  /** usage.completion_tokens_details.reasoning_tokens */
  reasoningTokens?: number;
  /** The usage object as sent, replacing the one built from the counts above (an engine's own shape). */
  usage?: Record<string, unknown>;
}

export type ScriptSource = Script | ((body: Record<string, any>) => Script);

export interface ScriptedUpstream {
  url: string;
  requests: Record<string, any>[];
  script(s: ScriptSource): void;
  stop(): void;
}

/** Splits a string in pieces of `n` characters, so streams carry several deltas. */
const pieces = (s: string, n = 4) => (s.match(new RegExp(`[\\s\\S]{1,${n}}`, "g")) ?? []);

export function startScriptedUpstream(): ScriptedUpstream {
  let script: ScriptSource = { content: "ok" };
  const state: ScriptedUpstream = {
    url: "",
    requests: [],
    script(s) {
      script = s;
    },
    stop() {
      server.stop(true);
    },
  };
  const { server, url } = serveLoopback({
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = (await req.json()) as Record<string, any>;
      state.requests.push(body);
      const s = typeof script === "function" ? script(body) : script;
      const counted: Record<string, unknown> = { prompt_tokens: s.promptTokens ?? 20, completion_tokens: s.completionTokens ?? 7, total_tokens: (s.promptTokens ?? 20) + (s.completionTokens ?? 7) };
      if (s.cachedTokens !== undefined) counted.prompt_tokens_details = { cached_tokens: s.cachedTokens };
      if (s.reasoningTokens !== undefined) counted.completion_tokens_details = { reasoning_tokens: s.reasoningTokens };
      const usage = s.usage ?? counted;
      const finish = s.finishReason ?? (s.toolCalls?.length ? "tool_calls" : "stop");
      const base = { id: "chatcmpl-scripted", created: 1_700_000_000, model: body.model };
      const calls = (s.toolCalls ?? []).map((c, i) => ({ index: i, id: `call_${i}`, type: "function", function: c }));
      if (!body.stream) {
        const text = (s.content ?? "") + (s.trailingContent ?? "");
        const message: Record<string, unknown> = { role: "assistant", content: text === "" ? null : text };
        if (s.reasoning) message.reasoning_content = s.reasoning;
        if (calls.length) message.tool_calls = calls.map(({ index: _i, ...c }) => c);
        return Response.json({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: finish, stop_reason: s.stopReason ?? null }], usage });
      }
      const frames: unknown[] = [];
      const chunk = (delta: unknown, finish_reason: string | null = null, extra: Record<string, unknown> = {}) =>
        frames.push({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason, ...extra }] });
      chunk({ role: "assistant", content: "" });
      for (const p of pieces(s.reasoning ?? "")) chunk({ reasoning_content: p });
      for (const p of pieces(s.content ?? "")) chunk({ content: p });
      const open = (c: (typeof calls)[number]) => chunk({ tool_calls: [{ index: c.index, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } }] });
      const args = (c: (typeof calls)[number], p: string) => chunk({ tool_calls: [{ index: c.index, function: { arguments: p } }] });
      if (s.interleaveToolCalls) {
        calls.forEach(open);
        const split = calls.map((c) => pieces(c.function.arguments, 5));
        for (let i = 0; i < Math.max(0, ...split.map((p) => p.length)); i++) calls.forEach((c, k) => split[k]![i] !== undefined && args(c, split[k]![i]!));
      } else {
        for (const c of calls) {
          open(c);
          for (const p of pieces(c.function.arguments, 5)) args(c, p);
        }
      }
      for (const p of pieces(s.trailingContent ?? "")) chunk({ content: p });
      chunk({}, finish, { stop_reason: s.stopReason ?? null });
      frames.push({ ...base, object: "chat.completion.chunk", choices: [], usage });
      const text = frames.map(sseFrame).join("") + SSE_DONE;
      return sseResponse(enc.encode(text));
    },
  });
  state.url = url;
  return state;
}
