/** POST /v1/chat/completions: validate, then the shared chat pipeline, plain or streamed. */
import type { App } from "../app";
import { requestIdOf } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { authenticate } from "../auth";
import { resolveModel } from "../../catalog/resolve";
import { ChatCompletionRequest, parseChatRequest, wantsPriority } from "../../chat/request";
import { completeChat, completionId, openChatStream, usageObject, type ChatCall } from "../../chat/pipeline";
import { StreamFailure } from "../../chat/stream";
import { producerStream } from "../streaming";
import { SSE_DONE, SSE_HEADERS, sseData } from "../../protocols/sse";
import { formatUsd } from "../../billing/money";
import { ClientGone } from "../../upstream/dispatch";
import { ApiError } from "../errors";

export const STREAM_HEARTBEAT_MS = 15_000;

export function registerChatRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/chat/completions", summary: "Chat completion (OpenAI protocol), plain or streamed.", auth: "key", body: ChatCompletionRequest, public: true });

  app.post("/v1/chat/completions", async ({ body, bearer, request, set, server }) => {
    const caller = authenticate(s, request, bearer, set);
    const req = parseChatRequest(body);
    const resolved = resolveModel(s, req.model, "chat", wantsPriority(req));
    const requestId = requestIdOf(set);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/chat/completions", resolved, request: req, signal: request.signal };

    if (req.stream !== true) {
      try {
        const { body: out, result } = await completeChat(s, call);
        set.headers["x-request-cost"] = formatUsd(result.charged);
        return out;
      } catch (err) {
        if (err instanceof ClientGone) throw new ApiError(499, "client_closed_request", "The client closed the request.");
        throw err;
      }
    }

    const stream = await openChatStream(s, call);
    // Long quiet streams must outlive Bun's idle timeout; heartbeats keep proxies happy too.
    server?.timeout(request, 0);
    const includeUsage = req.stream_options?.include_usage === true;
    const body$ = producerStream({
      heartbeatMs: STREAM_HEARTBEAT_MS,
      onCancel: () => void stream.cancel(),
      produce: async (w) => {
        let created = Math.floor(Date.now() / 1000);
        try {
          for await (const chunk of stream) {
            if (w.closed) break;
            if (typeof chunk.created === "number") created = chunk.created;
            w.write(sseData(chunk));
          }
        } catch (err) {
          if (err instanceof StreamFailure && !w.closed) {
            w.write(sseData({ error: { message: "The model backend failed mid-stream. This request was not billed.", type: "api_error", param: null, code: "upstream_error" } }));
          }
          return;
        }
        if (w.closed) return;
        const result = await stream.complete();
        if (includeUsage && result) {
          w.write(sseData({
            id: completionId(requestId), object: "chat.completion.chunk", created, model: resolved.requestedId,
            service_tier: resolved.tier, choices: [], usage: usageObject(null, result),
          }));
        }
        w.write(SSE_DONE);
      },
    });
    return new Response(body$, { headers: { ...SSE_HEADERS, ...(set.headers as Record<string, string>) } });
  });
}
