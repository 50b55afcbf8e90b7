/**
 * A small deterministic OpenAI-compatible engine for conformance probing (llmprobe) and tests
 * that need engine behaviour rather than a canned reply. It is no model: it answers by echoing
 * the conversation's user text, but it keeps the contracts a real engine keeps — max_tokens cuts
 * with finish "length", JSON mode and json_schema produce schema-shaped JSON, tool_choice
 * "required" or a named function produces calls with arguments shaped by the tool's schema,
 * `n` choices, logprobs, stop strings (reported vLLM-style), and a prefix cache whose hits are
 * reported as prompt_tokens_details.cached_tokens (in whole blocks, never the entire prompt).
 */
import { enc, serveLoopback, sseFrame, sseResponse, SSE_DONE } from "./loopback-server";

type Json = Record<string, any>;

export interface EngineUpstream {
  url: string;
  requests: Json[];
  stop(): void;
}

/** ~4 characters a token, split on those boundaries so streams carry several deltas. */
const tokenize = (s: string): string[] => s.match(/[\s\S]{1,4}/g) ?? [];
const countTokens = (s: string) => Math.ceil(s.length / 4);

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: Json) => (typeof p?.text === "string" ? p.text : "")).join(" ");
  return "";
}

/** A value shaped by a JSON schema: enums take their first value, types a plain example. */
function example(schema: Json | undefined, key = "value"): unknown {
  if (!schema || typeof schema !== "object") return "example";
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  const anyOf = schema.anyOf ?? schema.oneOf;
  if (!type && Array.isArray(anyOf) && anyOf.length) return example(anyOf[0], key);
  switch (type) {
    case "integer": return Math.max(1, schema.minimum ?? 1);
    case "number": return Math.max(1.5, schema.minimum ?? 1.5);
    case "boolean": return true;
    case "null": return null;
    case "array": return [example(schema.items, key)];
    case "object": case undefined: {
      const out: Json = {};
      for (const [k, v] of Object.entries((schema.properties ?? {}) as Json)) out[k] = example(v as Json, k);
      return out;
    }
    default: return key === "city" || key === "location" ? "Tokyo" : `example ${key}`;
  }
}

export function startEngineUpstream(): EngineUpstream {
  const requests: Json[] = [];
  /** Serialized message prefixes seen so far (the "prefix cache"). */
  const seen = new Set<string>();
  const { server, url } = serveLoopback({
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      // No model list (404): the gateway then routes every model here, as to an engine without one.
      if (path !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = (await req.json()) as Json;
      requests.push(body);
      const messages = (body.messages ?? []) as Json[];

      // Prompt and prefix cache: the longest run of leading messages sent before is cached.
      const prompt = messages.reduce((n, m) => n + 4 + countTokens(textOf(m.content)) + countTokens(JSON.stringify(m.tool_calls ?? "")), 0);
      let cached = 0;
      let running = 0;
      for (let k = 0; k < messages.length; k++) {
        const key = JSON.stringify(messages.slice(0, k + 1));
        const m = messages[k]!;
        running += 4 + countTokens(textOf(m.content)) + countTokens(JSON.stringify(m.tool_calls ?? ""));
        if (seen.has(key)) cached = running;
        seen.add(key);
      }

      // What the "model" says.
      const format = body.response_format as Json | undefined;
      const tools = (body.tools ?? []) as Json[];
      const choice = body.tool_choice;
      let calls: Json[] = [];
      if (tools.length && (choice === "required" || (choice && typeof choice === "object"))) {
        const named = typeof choice === "object" ? tools.filter((t) => t.function?.name === choice.function?.name) : body.parallel_tool_calls === false ? tools.slice(0, 1) : tools.slice(0, 3);
        calls = named.map((t, i) => ({ index: i, id: `call_${i}_${requests.length}`, type: "function", function: { name: t.function.name, arguments: JSON.stringify(example(t.function.parameters)) } }));
      }
      let text: string;
      if (format?.type === "json_schema") text = JSON.stringify(example(format.json_schema?.schema));
      else if (format?.type === "json_object") text = JSON.stringify({ answer: textOf(messages.filter((m) => m.role === "user").at(-1)?.content) });
      else text = "You said: " + messages.filter((m) => m.role === "user").map((m) => textOf(m.content)).join(" / ");
      if (calls.length) text = "";

      let tokens = tokenize(text);
      let finish = calls.length ? "tool_calls" : "stop";
      let stopReason: string | null = null;
      const stops = (typeof body.stop === "string" ? [body.stop] : (body.stop ?? [])) as string[];
      for (const s of stops) {
        const at = text.indexOf(s);
        if (s && at >= 0) {
          tokens = tokenize(text.slice(0, at));
          stopReason = s;
        }
      }
      const cap = body.max_completion_tokens ?? body.max_tokens ?? null;
      if (cap !== null && tokens.length > cap) {
        tokens = tokens.slice(0, cap);
        finish = "length";
        calls = [];
      }
      const completion = calls.length ? countTokens(JSON.stringify(calls)) : tokens.length;
      const usage = {
        prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
        // Like vLLM's prefix cache: whole 16-token blocks, and never the last token of the prompt.
        prompt_tokens_details: { cached_tokens: Math.floor(Math.min(cached, prompt - 1) / 16) * 16 },
      };
      const n = Math.max(1, Number(body.n ?? 1));
      const logprob = (t: string) => ({ token: t, logprob: -0.0123, bytes: [...enc.encode(t)], top_logprobs: Array.from({ length: Number(body.top_logprobs ?? 0) }, (_, k) => ({ token: k ? `${t}${k}` : t, logprob: -0.0123 - k, bytes: [...enc.encode(t)] })) });
      const base = { id: "chatcmpl-engine", created: 1_700_000_000, model: body.model, system_fingerprint: "fp_engine" };

      if (!body.stream) {
        const message: Json = { role: "assistant", content: calls.length ? null : tokens.join("") };
        if (calls.length) message.tool_calls = calls.map(({ index: _i, ...c }) => c);
        const choices = Array.from({ length: n }, (_, i) => ({
          index: i, message, finish_reason: finish, stop_reason: stopReason, logprobs: body.logprobs ? { content: tokens.map(logprob) } : null,
        }));
        return Response.json({ ...base, object: "chat.completion", choices, usage: { ...usage, completion_tokens: completion * n, total_tokens: prompt + completion * n } });
      }
      const frames: string[] = [];
      const chunk = (i: number, delta: Json, finish_reason: string | null = null, extra: Json = {}) =>
        frames.push(sseFrame({ ...base, object: "chat.completion.chunk", choices: [{ index: i, delta, finish_reason, logprobs: null, ...extra }] }));
      for (let i = 0; i < n; i++) {
        chunk(i, { role: "assistant", content: "" });
        for (const t of tokens) chunk(i, { content: t }, null, body.logprobs ? { logprobs: { content: [logprob(t)] } } : {});
        for (const c of calls) {
          chunk(i, { tool_calls: [{ index: c.index, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } }] });
          for (const piece of tokenize(c.function.arguments)) chunk(i, { tool_calls: [{ index: c.index, function: { arguments: piece } }] });
        }
        chunk(i, {}, finish, { stop_reason: stopReason });
      }
      if (body.stream_options?.include_usage) frames.push(sseFrame({ ...base, object: "chat.completion.chunk", choices: [], usage: { ...usage, completion_tokens: completion * n, total_tokens: prompt + completion * n } }));
      return sseResponse(enc.encode(frames.join("") + SSE_DONE));
    },
  });
  return { url, requests, stop: () => server.stop(true) };
}
