/**
 * An OpenAI-compatible upstream whose streams are generated as they are read (pull-based): each
 * streamed reply is `streamBytes` of content chunks (words), then a finish chunk, usage and [DONE].
 * Nothing is produced ahead of what the gateway reads, so `produced` shows how far each stream was
 * read. Plain replies are a short message. For backpressure tests.
 */
import { enc, serveLoopback, sseFrame, SSE_DONE } from "./loopback-server";

export interface PullUpstream {
  url: string;
  /** Bytes generated per stream, in request order. */
  produced: number[];
  /** The content of every content chunk (all alike: several words, ~1 KB on the wire). */
  piece: string;
  stop(): void;
}

export function startPullUpstream(streamBytes: number, word = "lorem "): PullUpstream {
  const state: PullUpstream = {
    url: "",
    produced: [],
    piece: word.repeat(Math.max(1, Math.floor(900 / word.length))),
    stop() {
      server.stop(true);
    },
  };
  const { server, url } = serveLoopback({
    idleTimeout: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = (await req.json()) as Record<string, any>;
      const base = { id: "chatcmpl-pull", object: "chat.completion.chunk", created: 1_700_000_000, model: body.model };
      if (!body.stream) {
        return Response.json({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } });
      }
      const i = state.produced.push(0) - 1;
      const piece = state.piece;
      const frame = enc.encode(sseFrame({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] }));
      let chunks = 0;
      let done = false;
      return new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              if (done) return;
              if (state.produced[i]! >= streamBytes) {
                done = true;
                const usage = { prompt_tokens: 5, completion_tokens: chunks, total_tokens: 5 + chunks };
                controller.enqueue(enc.encode(sseFrame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) + sseFrame({ ...base, choices: [], usage }) + SSE_DONE));
                controller.close();
                return;
              }
              chunks++;
              state.produced[i]! += frame.byteLength;
              controller.enqueue(frame);
            },
          },
          { highWaterMark: 0 },
        ),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
  state.url = url;
  return state;
}
