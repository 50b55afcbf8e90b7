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
import { authenticate, identify } from "../auth";
import { assertModelEndpoint, resolveModel } from "../../catalog/resolve";
import { OUTPUT_CEILING } from "../../catalog/catalog";
import { estimateInput, type ChatCall } from "../../chat/pipeline";
import { promptTokenCount } from "../../chat/tokens";
import { sseEvent } from "../../protocols/sse";
import { completeForRoute, MID_STREAM_FAILURE, streamForRoute } from "../chat-relay";
import { newId } from "../../accounts/ids";
import {
  CountTokensRequest, MessagesRequest, chatToolsOf, countExtras, omitsThinking, parseCountTokensRequest, parseMessagesRequest, toChatMessages, toChatRequest,
  wantsPriorityTier,
} from "../../protocols/anthropic/request";
import { IGNORED_TOOLS_HEADER, ignoredToolsHeader } from "../../protocols/ignored-tools";
import { toAnthropicMessage } from "../../protocols/anthropic/response";
import { AnthropicStreamTranslator, type AnthropicEvent } from "../../protocols/anthropic/stream";

const toolId = () => newId("toolu", 12);

export function registerMessagesRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/messages", summary: "Anthropic Messages protocol on the chat models, plain or streamed.", auth: "key", body: MessagesRequest, public: true });
  docs.add({ method: "POST", path: "/v1/messages/count_tokens", summary: "Estimated input tokens of a Messages request; free, no model call.", auth: "key", body: CountTokensRequest });

  app.post("/v1/messages/count_tokens", ({ body, bearer, request, set }) => {
    identify(s, request, bearer, set);
    assertModelEndpoint(s, body, "chat");
    const req = parseCountTokensRequest(body);
    const messages = toChatMessages(req);
    resolveModel(s, req.model, "chat");
    return { input_tokens: promptTokenCount(messages, countExtras(req)) };
  });

  app.post("/v1/messages", async ({ body, bearer, request, set, server }) => {
    const caller = authenticate(s, request, bearer, set);
    assertModelEndpoint(s, body, "chat");
    const req = parseMessagesRequest(body);
    const chatRequest = toChatRequest(req);
    const resolved = resolveModel(s, req.model, "chat", wantsPriorityTier(req));
    // Anthropic clients must send max_tokens and size it from their own idea of the model (an
    // aliased claude-* id, say); above this model's output ceiling it is lowered to the ceiling.
    chatRequest.max_tokens = Math.min(req.max_tokens, resolved.entry.maxOutputTokens, OUTPUT_CEILING);
    const requestId = requestIdOf(set);
    const id = "msg_" + requestId.replace(/^req_/, "");
    // The Anthropic SDK reports this header as the request id of responses and errors.
    set.headers["request-id"] = requestId;
    const { ignored } = chatToolsOf(req);
    if (ignored.length > 0) set.headers[IGNORED_TOOLS_HEADER] = ignoredToolsHeader(ignored);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/messages", resolved, request: chatRequest, signal: request.signal };
    const stopSequences = req.stop_sequences ?? [];
    const omitThinking = omitsThinking(req);

    if (req.stream !== true) {
      return completeForRoute(s, call, set, (chat, result) =>
        toAnthropicMessage(chat, { id, model: resolved.requestedId, result, stopSequences, omitThinking, toolId }));
    }

    const translator = new AnthropicStreamTranslator({ id, model: resolved.requestedId, inputTokens: estimateInput(chatRequest), stopSequences, omitThinking, toolId });
    const frames = (events: AnthropicEvent[]) => events.map((e) => sseEvent(e.event, e.data));
    return streamForRoute(s, call, { request, server, set }, {
      start: () => frames(translator.start()),
      push: (chunk) => frames(translator.push(chunk)),
      failed: () => frames([AnthropicStreamTranslator.error(MID_STREAM_FAILURE)]),
      finish: (result) => frames(translator.finish(result)),
    });
  });
}
