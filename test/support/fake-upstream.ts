/**
 * A fake OpenAI-compatible upstream for tests: a real HTTP server on loopback whose behaviour
 * each test sets. It records every request body it receives, so tests can check what the
 * gateway forwarded (model rewrites, usage requests, pass-through fields).
 */
import { enc, serveLoopback, sleep, sseFrame, sseResponse, SSE_DONE } from "./loopback-server";

export interface Behaviour {
  /** Words of the reply; each becomes one stream chunk. */
  words?: string[];
  promptTokens?: number;
  /** Omit usage from responses and streams. */
  omitUsage?: boolean;
  /** Answer with this HTTP status and an error body. */
  failStatus?: number;
  /** Wait this long before sending response headers. */
  delayMs?: number;
  /** Wait this long between stream chunks. */
  chunkDelayMs?: number;
  /** Break the stream after this many chunks (an error event, then close). */
  errorAfterChunks?: number;
  /** Close the TCP connection abruptly after this many chunks. */
  dropAfterChunks?: number;
  /** Reply with tool calls instead of text. */
  toolCall?: { name: string; arguments: string };
  /** Extra top-level fields to include in responses (e.g. to check they are stripped). */
  extra?: Record<string, unknown>;
  /** Report this usage instead of the true counts (an upstream that over-reports). */
  reportUsage?: { prompt: number; completion: number };
  /** Report this many of the prompt tokens as read from the prompt cache (prompt_tokens_details.cached_tokens). */
  cachedTokens?: number;
  /**
   * Stream `words` over and over and never finish (an upstream that ignores max_tokens); chunks are
   * produced as the reader pulls them, so a reader that stops stops it.
   */
  endless?: boolean;
  /** Called once every content chunk is sent, before the final chunk (a test's hook into "the end"). */
  beforeFinish?: () => void | Promise<void>;
}

export interface FakeUpstream {
  url: string;
  requests: Record<string, any>[];
  /** Streams whose client went away before they finished. */
  aborted: number;
  /** Chat requests being answered now (arrival to the end of the reply), and the most seen at once. */
  active: number;
  maxActive: number;
  behave(b: Behaviour): void;
  /** What GET /v1/models lists from now on (null: it answers 404, as an engine without the list). */
  serve(models: ListedModel[] | null): void;
  /** GET /v1/models requests received. */
  listRequests: number;
  stop(): void;
}

/** A model as GET /v1/models lists it (vLLM adds `max_model_len`). */
export interface ListedModel {
  id: string;
  owned_by?: string;
  max_model_len?: number;
}

export interface FakeOptions {
  /** Keep every request body in `requests` (default true; a benchmark turns it off). */
  recordRequests?: boolean;
  /**
   * What GET /v1/models lists. Default null: it answers 404, so the gateway cannot tell what it
   * serves and routes every model to it (the fake answers any model id).
   */
  models?: ListedModel[] | null;
}

export function startFakeUpstream(initial: Behaviour = {}, options: FakeOptions = {}): FakeUpstream {
  const record = options.recordRequests ?? true;
  let behaviour: Behaviour = initial;
  let listed = options.models ?? null;
  const state: FakeUpstream = {
    url: "",
    requests: [],
    aborted: 0,
    active: 0,
    maxActive: 0,
    behave(b) {
      behaviour = b;
    },
    serve(models) {
      listed = models;
    },
    listRequests: 0,
    stop() {
      server.stop(true);
    },
  };

  const { server, url } = serveLoopback({
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/v1/models") {
        state.listRequests++;
        if (listed === null) return new Response("not found", { status: 404 });
        return Response.json({ object: "list", data: listed.map((m) => ({ object: "model", created: 1_700_000_000, owned_by: "vllm", ...m })) });
      }
      if (url.pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = (await req.json()) as Record<string, any>;
      if (record) state.requests.push(body);
      state.active++;
      state.maxActive = Math.max(state.maxActive, state.active);
      let ended = false;
      const end = () => {
        if (!ended) state.active--;
        ended = true;
      };
      const b = behaviour;
      if (b.delayMs) await sleep(b.delayMs);
      if (b.failStatus) {
        end();
        return Response.json({ error: { message: `fake upstream internal detail at host fake-${b.failStatus}`, type: "server_error" } }, { status: b.failStatus });
      }
      const words = b.words ?? ["Hello", " from", " the", " fake", " upstream", "."];
      const prompt = b.promptTokens ?? 11;
      const usage = b.reportUsage
        ? { prompt_tokens: b.reportUsage.prompt, completion_tokens: b.reportUsage.completion, total_tokens: b.reportUsage.prompt + b.reportUsage.completion }
        : { prompt_tokens: prompt, completion_tokens: words.length, total_tokens: prompt + words.length };
      if (b.cachedTokens !== undefined) Object.assign(usage, { prompt_tokens_details: { cached_tokens: b.cachedTokens } });
      const base = { id: "chatcmpl-upstream-secret", created: 1_700_000_000, model: body.model, system_fingerprint: "fp_upstream_secret", ...b.extra };
      if (!body.stream) {
        const message = b.toolCall
          ? { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: b.toolCall }] }
          : { role: "assistant", content: words.join("") };
        end();
        return Response.json({
          ...base,
          object: "chat.completion",
          choices: [{ index: 0, message, finish_reason: b.toolCall ? "tool_calls" : "stop", logprobs: null }],
          ...(b.omitUsage ? {} : { usage }),
        });
      }
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        enc.encode(sseFrame({ ...base, object: "chat.completion.chunk", choices, ...extra }));
      if (b.endless) {
        let i = 0;
        return sseResponse(
          new ReadableStream<Uint8Array>({
            async pull(controller) {
              if (b.chunkDelayMs) await sleep(b.chunkDelayMs);
              controller.enqueue(chunk([{ index: 0, delta: { content: words[i++ % words.length] }, finish_reason: null }]));
            },
            cancel() {
              end();
              state.aborted++;
            },
          }),
        );
      }
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            controller.enqueue(chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]));
            if (b.toolCall) {
              const args = b.toolCall.arguments;
              const half = Math.ceil(args.length / 2);
              controller.enqueue(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: b.toolCall.name, arguments: "" } }] }, finish_reason: null }]));
              for (const part of [args.slice(0, half), args.slice(half)]) {
                if (b.chunkDelayMs) await sleep(b.chunkDelayMs);
                controller.enqueue(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: part } }] }, finish_reason: null }]));
              }
            } else {
              for (let i = 0; i < words.length; i++) {
                if (b.chunkDelayMs) await sleep(b.chunkDelayMs);
                if (b.errorAfterChunks === i) {
                  controller.enqueue(enc.encode(sseFrame({ error: { message: "fake upstream exploded", type: "server_error" } })));
                  controller.close();
                  return;
                }
                if (b.dropAfterChunks === i) {
                  controller.error(new Error("connection dropped"));
                  return;
                }
                controller.enqueue(chunk([{ index: 0, delta: { content: words[i] }, finish_reason: null }]));
              }
            }
            await b.beforeFinish?.();
            controller.enqueue(chunk([{ index: 0, delta: {}, finish_reason: b.toolCall ? "tool_calls" : "stop" }]));
            if (!b.omitUsage && body.stream_options?.include_usage) controller.enqueue(chunk([], { usage }));
            controller.enqueue(enc.encode(SSE_DONE));
            controller.close();
          } catch {
            // The gateway went away mid-stream.
            state.aborted++;
          } finally {
            end();
          }
        },
        cancel() {
          end();
          state.aborted++;
        },
      });
      return sseResponse(stream);
    },
  });
  state.url = url;
  return state;
}
