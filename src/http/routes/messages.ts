/**
 * POST /v1/messages (Anthropic Messages protocol) and /v1/messages/count_tokens.
 * The request is translated to chat completions and runs through the shared chat pipeline, so
 * billing, limits, turbo and model checks are exactly those of /v1/chat/completions.
 * `anthropic-version`, `anthropic-beta` and `?beta=true` are accepted and need nothing from us.
 */
import type { App } from "../app";
import { requestIdOf } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { authenticate } from "../auth";
import { assertModelEndpoint, resolveModel } from "../../catalog/resolve";
import { estimateInput, type ChatCall } from "../../chat/pipeline";
import { CountAborted } from "../../chat/token-counter";
import { clientGone } from "../../errors";
import { sseEvent } from "../../protocols/sse";
import { completeForRoute, MID_STREAM_FAILURE, streamForRoute } from "../chat-relay";
import { newId } from "../../accounts/ids";
import {
  CountTokensRequest, MessagesRequest, countExtras, parseCountTokensRequest, parseMessagesRequest, toChatMessages, toChatRequest, wantsPriorityTier,
} from "../../protocols/anthropic/request";
import { toAnthropicMessage } from "../../protocols/anthropic/response";
import { AnthropicStreamTranslator, type AnthropicEvent } from "../../protocols/anthropic/stream";

const toolId = () => newId("toolu", 12);

export function registerMessagesRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/messages", summary: "Anthropic Messages protocol on the chat models, plain or streamed.", auth: "key", body: MessagesRequest, public: true });
  docs.add({ method: "POST", path: "/v1/messages/count_tokens", summary: "Estimated input tokens of a Messages request; free, no model call.", auth: "key", body: CountTokensRequest });

  // Free of charge, but admitted like every model endpoint: counting costs CPU.
  app.post("/v1/messages/count_tokens", async ({ body, bearer, request, set }) => {
    authenticate(s, request, bearer, set);
    assertModelEndpoint(s, body, "chat");
    const req = parseCountTokensRequest(body);
    const messages = toChatMessages(req);
    resolveModel(s, req.model, "chat");
    try {
      return { input_tokens: await s.tokens.prompt(messages, countExtras(req), { signal: request.signal }) };
    } catch (err) {
      throw err instanceof CountAborted ? clientGone() : err;
    }
  });

  app.post("/v1/messages", async ({ body, bearer, request, set, server }) => {
    const caller = authenticate(s, request, bearer, set);
    assertModelEndpoint(s, body, "chat");
    const req = parseMessagesRequest(body);
    const chatRequest = toChatRequest(req);
    const resolved = resolveModel(s, req.model, "chat", wantsPriorityTier(req));
    const requestId = requestIdOf(set);
    const id = "msg_" + requestId.replace(/^req_/, "");
    // The Anthropic SDK reports this header as the request id of responses and errors.
    set.headers["request-id"] = requestId;
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/messages", resolved, request: chatRequest, signal: request.signal };
    const stopSequences = req.stop_sequences ?? [];

    if (req.stream !== true) {
      return completeForRoute(s, call, set, (chat, result) =>
        toAnthropicMessage(chat, { id, model: resolved.requestedId, result, stopSequences, toolId }));
    }

    const inputTokens = await estimateInput(s, call).catch((err) => {
      throw err instanceof CountAborted ? clientGone() : err;
    });
    const translator = new AnthropicStreamTranslator({ id, model: resolved.requestedId, inputTokens, stopSequences, toolId });
    const frames = (events: AnthropicEvent[]) => events.map((e) => sseEvent(e.event, e.data));
    return streamForRoute(s, call, { request, server, set }, {
      start: () => frames(translator.start()),
      push: (chunk) => frames(translator.push(chunk)),
      failed: () => frames([AnthropicStreamTranslator.error(MID_STREAM_FAILURE)]),
      finish: (result) => frames(translator.finish(result)),
    });
  });
}
