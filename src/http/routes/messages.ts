/**
 * POST /v1/messages (Anthropic Messages protocol) and /v1/messages/count_tokens.
 * The request is translated to chat completions and runs through the shared chat pipeline, so
 * billing, limits, turbo and model checks are exactly those of /v1/chat/completions.
 * `anthropic-version`, `anthropic-beta` and `?beta=true` are accepted and need nothing from us.
 */
import type { App } from "../route-module";
import { assertModelAllowed } from "../../accounts/key-controls";
import { requestIdOf } from "../request-context";
import type { RouteDocs } from "../route-docs";
import { authenticate, holdKey } from "../auth";
import type { AccountBudget } from "../../limits/account-budget";
import { assertModelEndpoint, resolveModel } from "../../catalog/resolve";
import { OUTPUT_CEILING } from "../../catalog/catalog";
import { knownInput, type ChatCall } from "../../chat/call";
import { tokenBudget } from "../../chat/request";
import { promptTextBytes } from "../../tokens/tokens";
import { CountAborted } from "../../tokens/token-counter";
import { clientGone, countTokensBytesExceeded } from "../../errors";
import { sseEvent, sseEvents } from "../../protocols/sse";
import { completeForRoute, streamForRoute } from "../chat-route";
import type { ChatProtocolDeps } from "./chat";
import { errorBody } from "../errors";
import { newId } from "../../accounts/ids";
import {
  CountTokensRequest, MessagesRequest, chatToolsOf, countExtras, omitsThinking, usesPromptCache, parseCountTokensRequest, parseMessagesRequest, toChatMessages, toChatRequest,
  wantsPriorityTier,
} from "../../protocols/anthropic/request";
import { IGNORED_TOOLS_HEADER, ignoredToolsHeader } from "../../protocols/ignored-tools";
import { toAnthropicMessage } from "../../protocols/anthropic/response";
import { AnthropicStreamTranslator } from "../../protocols/anthropic/stream";

const toolId = () => newId("toolu", 12);

/** What the Messages routes use: a chat protocol route's services, and the bytes each account's count_tokens has in flight. */
export type MessagesRouteDeps = ChatProtocolDeps & { countTokensBytes: AccountBudget };

export function registerMessagesRoutes(app: App, s: MessagesRouteDeps, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/messages", summary: "Anthropic Messages protocol on the chat models, plain or streamed.", auth: "key", body: MessagesRequest, public: true });
  docs.add({ method: "POST", path: "/v1/messages/count_tokens", summary: "Estimated input tokens of a Messages request; free, no model call.", auth: "key", body: CountTokensRequest });

  // Free of charge, but admitted like every model endpoint: counting costs CPU.
  app.post("/v1/messages/count_tokens", async ({ body, bearer, request, set }) => {
    const admitted = authenticate(s, request, bearer, set);
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "chat");
    const req = parseCountTokensRequest(body);
    const messages = toChatMessages(req);
    assertModelAllowed(s, caller.key.models, req.model, resolveModel(s, req.model, "chat"));
    // Free, so bounded per account by the bytes it may have counted at once, besides the queue's own cap.
    const extras = countExtras(req);
    const bytes = promptTextBytes(messages, extras);
    const account = caller.accountId;
    if (!s.countTokensBytes.take(account, bytes)) throw countTokensBytesExceeded(s.countTokensBytes.cap, bytes);
    try {
      return { input_tokens: await s.tokens.prompt(messages, extras, { signal: request.signal, account, admission: true }) };
    } catch (err) {
      throw err instanceof CountAborted ? clientGone() : err;
    } finally {
      s.countTokensBytes.give(account, bytes);
    }
  });

  app.post("/v1/messages", async ({ body, bearer, request, set, server }) => {
    const admitted = authenticate(s, request, bearer, set);
    // Synchronous unless the store had to be asked (PostgreSQL, a key not cached): no await then.
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "chat");
    const req = parseMessagesRequest(body);
    const tools = chatToolsOf(req);
    const chatRequest = toChatRequest(req, tools);
    const resolved = resolveModel(s, req.model, "chat", wantsPriorityTier(req));
    assertModelAllowed(s, caller.key.models, req.model, resolved);
    // Anthropic clients must send max_tokens and size it from their own idea of the model (an
    // aliased claude-* id, say); above this model's output ceiling it is lowered to the ceiling.
    chatRequest.max_tokens = Math.min(req.max_tokens, resolved.entry.maxOutputTokens, OUTPUT_CEILING);
    const requestId = requestIdOf(set);
    const id = "msg_" + requestId.replace(/^req_/, "");
    // The Anthropic SDK reports this header as the request id of responses and errors.
    set.headers["request-id"] = requestId;
    const { ignored } = tools;
    if (ignored.length > 0) set.headers[IGNORED_TOOLS_HEADER] = ignoredToolsHeader(ignored);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/messages", resolved, key: holdKey(caller), request: chatRequest, signal: request.signal };
    const stopSequences = req.stop_sequences ?? [];
    const omitThinking = omitsThinking(req);
    const cacheAccounting = usesPromptCache(req);

    if (req.stream !== true) {
      return completeForRoute(s, call, set, (chat, result) =>
        toAnthropicMessage(chat, { id, model: resolved.requestedId, result, stopSequences, omitThinking, cacheAccounting, toolId }));
    }

    // message_start never waits for a count: it announces the count when a context check made
    // one already, else the prompt's upper bound (UTF-8 bytes); message_delta carries the exact
    // count, which the Anthropic SDK takes over the first (docs/protocols.md, "Anthropic Messages and OpenAI Responses").
    const inputBound = tokenBudget(chatRequest, resolved.entry).inputBound;
    const translator = new AnthropicStreamTranslator({ id, model: resolved.requestedId, inputTokens: inputBound, stopSequences, omitThinking, cacheAccounting, toolId });
    return streamForRoute(s, call, { request, server, set }, {
      start: () => sseEvents(translator.start(knownInput(call) ?? inputBound)),
      push: (chunk, frames) => frames.events(translator.push(chunk)),
      failed: (error) => sseEvent("error", errorBody(error, "anthropic")),
      finish: (result) => ({ frames: sseEvents(translator.finish(result)) }),
    });
  });
}
