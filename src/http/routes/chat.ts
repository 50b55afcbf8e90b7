/** POST /v1/chat/completions: validate, then the shared chat pipeline, plain or streamed. */
import type { App } from "../route-module";
import { assertModelAllowed } from "../../accounts/key-controls";
import { requestIdOf } from "../request-context";
import type { RouteDocs } from "../route-docs";
import { authenticate, holdKey, type KeyAuthDeps } from "../auth";
import { assertModelEndpoint, resolveModel, type ModelResolver } from "../../catalog/resolve";
import { ChatCompletionRequest, parseChatRequest, wantsPriority } from "../../chat/request";
import { usageObject } from "../../chat/pipeline";
import { completionId, type ChatCall } from "../../chat/call";
import { SSE_DONE, sseData } from "../../protocols/sse";
import { completeForRoute, streamForRoute, type ChatAnswerDeps } from "../chat-route";
import { errorBody } from "../errors";

/** What a chat protocol route uses: the caller's key and admission, the model's resolution, and the chat pipeline. */
export type ChatProtocolDeps = KeyAuthDeps & ModelResolver & ChatAnswerDeps;

export function registerChatRoutes(app: App, s: ChatProtocolDeps, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/chat/completions", summary: "Chat completion (OpenAI protocol), plain or streamed.", auth: "key", body: ChatCompletionRequest, public: true });

  app.post("/v1/chat/completions", async ({ body, bearer, request, set, server }) => {
    const admitted = authenticate(s, request, bearer, set);
    // Synchronous unless the store had to be asked (PostgreSQL, a key not cached): no await then.
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "chat");
    const req = parseChatRequest(body);
    const resolved = resolveModel(s, req.model, "chat", wantsPriority(req));
    assertModelAllowed(s, caller.key.models, req.model, resolved);
    const requestId = requestIdOf(set);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/chat/completions", resolved, key: holdKey(caller), request: req, signal: request.signal };

    if (req.stream !== true) return completeForRoute(s, call, set, (body) => body);

    const includeUsage = req.stream_options?.include_usage === true;
    let created = Math.floor(Date.now() / 1000);
    return streamForRoute(s, call, { request, server, set }, {
      push(chunk, frames) {
        if (typeof chunk.created === "number") created = chunk.created;
        frames.data(JSON.stringify(chunk));
      },
      failed: (error) => sseData(errorBody(error, "openai")),
      finish(result) {
        const usage = includeUsage
          ? sseData({
              id: completionId(requestId), object: "chat.completion.chunk", created, model: resolved.requestedId,
              service_tier: resolved.tier, choices: [], usage: usageObject(null, result),
            })
          : "";
        return { frames: usage + SSE_DONE };
      },
    });
  });
}
