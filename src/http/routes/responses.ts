/**
 * POST /v1/responses (OpenAI Responses protocol) and the stored-response endpoints.
 * Each turn is translated to chat completions and runs through the shared chat pipeline, so
 * billing, limits, turbo and model checks are those of /v1/chat/completions. With `store`
 * (default true) the turn is kept for GET/DELETE and for `previous_response_id`.
 */
import type { App } from "../app";
import { requestIdOf } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { authenticate, identify } from "../auth";
import { DomainError, invalidField } from "../../errors";
import { assertModelEndpoint, resolveModel } from "../../catalog/resolve";
import { OUTPUT_CEILING } from "../../catalog/catalog";
import { type ChatCall } from "../../chat/pipeline";
import { SSE_DONE, sseEvent } from "../../protocols/sse";
import { completeForRoute, MID_STREAM_FAILURE, streamForRoute } from "../chat-relay";
import { newId } from "../../accounts/ids";
import { ResponseStore } from "../../store/responses";
import { ResponsesRequest, normalizeInput, parseResponsesRequest, toChatRequest, wantsPriorityTier } from "../../protocols/responses/request";
import { responsesTools } from "../../protocols/responses/tools";
import { IGNORED_TOOLS_HEADER, ignoredToolsHeader } from "../../protocols/ignored-tools";
import { toResponseObject, type ResponseShell } from "../../protocols/responses/response";
import { ResponsesStreamTranslator, type ResponsesEvent } from "../../protocols/responses/stream";

type Json = Record<string, unknown>;

const itemId = (prefix: string) => newId(prefix, 12);

const responseNotFound = (id: string, param: string | null = null) =>
  new DomainError("not_found", "not_found", `Response with id '${id}' not found.`, param);

export function registerResponsesRoutes(app: App, s: Services, docs: RouteDocs): void {
  const store = new ResponseStore(s.db);
  docs.add({ method: "POST", path: "/v1/responses", summary: "OpenAI Responses protocol on the chat models, plain or streamed; stored by default.", auth: "key", body: ResponsesRequest, public: true });
  docs.add({ method: "GET", path: "/v1/responses/:id", summary: "A stored response of this account.", auth: "key" });
  docs.add({ method: "DELETE", path: "/v1/responses/:id", summary: "Deletes a stored response of this account.", auth: "key" });
  docs.add({ method: "GET", path: "/v1/responses/:id/input_items", summary: "The input items of a stored response (cursor list).", auth: "key" });

  app.post("/v1/responses", async ({ body, bearer, request, set, server }) => {
    const caller = authenticate(s, request, bearer, set);
    assertModelEndpoint(s, body, "chat");
    const req = parseResponsesRequest(body);
    let history: Json[] = [];
    if (req.previous_response_id) {
      const conversation = store.conversation(req.previous_response_id, caller.accountId);
      if (!conversation) throw responseNotFound(req.previous_response_id, "previous_response_id");
      history = conversation;
    }
    const input = normalizeInput(req.input, itemId, (id) => store.item(id, caller.accountId));
    const tools = responsesTools(req.tools as Json[] | null | undefined);
    const chatRequest = toChatRequest(req, history, input, tools);
    const resolved = resolveModel(s, req.model, "chat", wantsPriorityTier(req));
    const ceiling = Math.min(resolved.entry.maxOutputTokens, OUTPUT_CEILING);
    if (req.max_output_tokens != null && req.max_output_tokens > ceiling) {
      throw invalidField("max_output_tokens", `must be at most ${ceiling} (the output ceiling of this API), got ${req.max_output_tokens}`);
    }
    const requestId = requestIdOf(set);
    const shell: ResponseShell = {
      id: "resp_" + requestId.replace(/^req_/, ""), createdAt: Math.floor(Date.now() / 1000), model: resolved.requestedId, serviceTier: resolved.tier, request: req,
      toolNames: tools.byChatName,
    };
    if (tools.ignored.length > 0) set.headers[IGNORED_TOOLS_HEADER] = ignoredToolsHeader(tools.ignored);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/responses", resolved, request: chatRequest, signal: request.signal };
    const keep = (response: Json) => {
      if (req.store === false) return;
      store.save({ id: shell.id, accountId: caller.accountId, previousResponseId: req.previous_response_id ?? null, inputItems: input, response, createdAt: shell.createdAt });
    };

    if (req.stream !== true) {
      return completeForRoute(s, call, set, (chat, result) => {
        const response = toResponseObject(shell, chat, result, itemId);
        keep(response);
        return response;
      });
    }

    const translator = new ResponsesStreamTranslator(shell, itemId);
    const frames = (events: ResponsesEvent[]) => events.map((e) => sseEvent(e.event, e.data));
    return streamForRoute(s, call, { request, server, set }, {
      start: () => frames(translator.start()),
      push: (chunk) => frames(translator.push(chunk)),
      failed: () => [...frames(translator.fail(MID_STREAM_FAILURE)), SSE_DONE],
      finish(result) {
        if (!result) return [];
        const { events, response } = translator.finish(result);
        // Stored before the final event, so a client may retrieve it as soon as it sees the end.
        keep(response);
        return [...frames(events), SSE_DONE];
      },
    });
  });

  app.get("/v1/responses/:id", ({ params, bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    const stored = store.get(params.id, caller.accountId);
    if (!stored) throw responseNotFound(params.id);
    return stored.response;
  });

  app.delete("/v1/responses/:id", ({ params, bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    if (!store.delete(params.id, caller.accountId)) throw responseNotFound(params.id);
    return { id: params.id, object: "response", deleted: true };
  });

  app.get("/v1/responses/:id/input_items", ({ params, query, bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    const stored = store.get(params.id, caller.accountId);
    if (!stored) throw responseNotFound(params.id);
    return inputItemsPage(stored.inputItems, query as Record<string, string | undefined>);
  });
}

/** OpenAI's cursor list: `order` (desc by default), `limit` 1–100 (20), `after` an item id. */
function inputItemsPage(items: Json[], q: Record<string, string | undefined>) {
  const order = q.order ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalidField("order", 'must be "asc" or "desc"');
  const limit = q.limit === undefined ? 20 : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidField("limit", "must be an integer from 1 to 100");
  let list = order === "desc" ? [...items].reverse() : items;
  if (q.after !== undefined) {
    const at = list.findIndex((i) => i.id === q.after);
    if (at < 0) throw invalidField("after", `no input item has id '${q.after}'`);
    list = list.slice(at + 1);
  }
  const data = list.slice(0, limit);
  return { object: "list", data, first_id: (data[0]?.id as string | undefined) ?? null, last_id: (data[data.length - 1]?.id as string | undefined) ?? null, has_more: list.length > limit };
}
