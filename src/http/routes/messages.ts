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
import { ApiError } from "../errors";
import { resolveModel } from "../../catalog/resolve";
import { completeChat, estimateInput, openChatStream, type ChatCall } from "../../chat/pipeline";
import { StreamFailure } from "../../chat/stream";
import { promptTokenCount } from "../../chat/tokens";
import { producerStream } from "../streaming";
import { SSE_HEADERS, sseEvent } from "../../protocols/sse";
import { formatUsd } from "../../billing/money";
import { ClientGone } from "../../upstream/dispatch";
import { newId } from "../../accounts/ids";
import {
  CountTokensRequest, MessagesRequest, countExtras, parseCountTokensRequest, parseMessagesRequest, toChatMessages, toChatRequest, wantsPriorityTier,
} from "../../protocols/anthropic/request";
import { toAnthropicMessage } from "../../protocols/anthropic/response";
import { AnthropicStreamTranslator, type AnthropicEvent } from "../../protocols/anthropic/stream";
import { STREAM_HEARTBEAT_MS } from "./chat";

const toolId = () => newId("toolu", 12);

export function registerMessagesRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/messages", summary: "Anthropic Messages protocol on the chat models, plain or streamed.", auth: "key", body: MessagesRequest, public: true });
  docs.add({ method: "POST", path: "/v1/messages/count_tokens", summary: "Estimated input tokens of a Messages request; free, no model call.", auth: "key", body: CountTokensRequest });

  app.post("/v1/messages/count_tokens", ({ body, bearer, request }) => {
    identify(s, request, bearer);
    const req = parseCountTokensRequest(body);
    const messages = toChatMessages(req);
    resolveModel(s, req.model, "chat");
    return { input_tokens: promptTokenCount(messages, countExtras(req)) };
  });

  app.post("/v1/messages", async ({ body, bearer, request, set, server }) => {
    const caller = authenticate(s, request, bearer, set);
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
      try {
        const { body: chat, result } = await completeChat(s, call);
        set.headers["x-request-cost"] = formatUsd(result.charged);
        return toAnthropicMessage(chat, { id, model: resolved.requestedId, result, stopSequences, toolId });
      } catch (err) {
        if (err instanceof ClientGone) throw new ApiError(499, "client_closed_request", "The client closed the request.");
        throw err;
      }
    }

    const stream = await openChatStream(s, call);
    server?.timeout(request, 0);
    const translator = new AnthropicStreamTranslator({ id, model: resolved.requestedId, inputTokens: estimateInput(chatRequest), stopSequences, toolId });
    const body$ = producerStream({
      heartbeatMs: STREAM_HEARTBEAT_MS,
      onCancel: () => void stream.cancel(),
      produce: async (w) => {
        const send = (events: AnthropicEvent[]) => {
          for (const e of events) w.write(sseEvent(e.event, e.data));
        };
        send(translator.start());
        try {
          for await (const chunk of stream) {
            if (w.closed) break;
            send(translator.push(chunk));
          }
        } catch (err) {
          if (err instanceof StreamFailure && !w.closed) {
            send([AnthropicStreamTranslator.error("The model backend failed mid-stream. This request was not billed.")]);
          }
          return;
        }
        if (w.closed) return;
        send(translator.finish(await stream.complete()));
      },
    });
    return new Response(body$, { headers: { ...SSE_HEADERS, ...(set.headers as Record<string, string>) } });
  });
}
