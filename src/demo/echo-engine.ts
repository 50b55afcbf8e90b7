/**
 * The demo's echo engine (`switchyard demo`, README "Try it"): a small OpenAI-compatible
 * chat-completions server on a free loopback port that answers with the last user message,
 * streaming or not, with usage (about four characters a token), and lists one model, `demo-echo`,
 * at GET /v1/models. It is no model and nothing else in the product uses it: it lets a first chat
 * request work before any inference engine is installed.
 */
import type { Server } from "bun";

export const DEMO_MODEL = "demo-echo";

type Json = Record<string, any>;

export interface EchoEngine {
  /** The OpenAI-style base URL, ending at /v1. */
  url: string;
  stop(): void;
}

const countTokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));
/** Pieces of about one token each, so a stream carries several deltas. */
const pieces = (s: string): string[] => s.match(/[\s\S]{1,4}/g) ?? [];

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: Json) => (typeof p?.text === "string" ? p.text : "")).filter(Boolean).join(" ");
  return "";
}

function error(status: number, message: string, param: string | null = null): Response {
  return Response.json({ error: { message, type: "invalid_request_error", param, code: null } }, { status });
}

/** The answer to one chat-completions body (already parsed). */
function complete(body: Json): Response {
  if (!Array.isArray(body.messages)) return error(400, "messages: must be an array", "messages");
  const messages = body.messages as Json[];
  const lastUser = [...messages].reverse().find((m) => m?.role === "user");
  const text = lastUser ? textOf(lastUser.content) : "";
  let out = pieces(text);
  let finish = "stop";
  const cap = body.max_completion_tokens ?? body.max_tokens;
  if (typeof cap === "number" && cap >= 0 && out.length > cap) {
    out = out.slice(0, cap);
    finish = "length";
  }
  const prompt = messages.reduce((n, m) => n + 4 + countTokens(textOf(m?.content)), 0);
  const usage = { prompt_tokens: prompt, completion_tokens: out.length, total_tokens: prompt + out.length };
  const base = { id: `chatcmpl-echo-${crypto.randomUUID()}`, created: Math.floor(Date.now() / 1000), model: typeof body.model === "string" ? body.model : DEMO_MODEL };
  if (body.stream !== true) {
    return Response.json({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: out.join("") }, finish_reason: finish, logprobs: null }], usage });
  }
  const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
  const chunk = (delta: Json, finish_reason: string | null = null) => frame({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason, logprobs: null }] });
  let sse = chunk({ role: "assistant", content: "" });
  for (const p of out) sse += chunk({ content: p });
  sse += chunk({}, finish);
  if (body.stream_options?.include_usage === true) sse += frame({ ...base, object: "chat.completion.chunk", choices: [], usage });
  sse += "data: [DONE]\n\n";
  return new Response(sse, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

async function handle(req: Request): Promise<Response> {
  const path = new URL(req.url).pathname;
  if (req.method === "GET" && path === "/v1/models") {
    return Response.json({ object: "list", data: [{ id: DEMO_MODEL, object: "model", created: 0, owned_by: "demo", max_model_len: 8192 }] });
  }
  if (path !== "/v1/chat/completions") return error(404, `no route ${req.method} ${path}`);
  if (req.method !== "POST") return error(405, "use POST");
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return error(400, "body: must be JSON");
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return error(400, "body: must be a JSON object");
  return complete(body as Json);
}

/** Starts the echo engine on a free 127.0.0.1 port. */
export function startEchoEngine(): EchoEngine {
  const server: Server<undefined> = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handle });
  return { url: `http://127.0.0.1:${server.port}/v1`, stop: () => void server.stop(true) };
}
