/**
 * POST /v1/responses (OpenAI Responses protocol) and the stored-response endpoints.
 * Each turn is translated to chat completions and runs through the shared chat pipeline, so
 * billing, limits, turbo and model checks are those of /v1/chat/completions. With `store`
 * (default true) the turn is kept for GET/DELETE and for `previous_response_id`.
 */
import type { App } from "../route-module";
import { assertModelAllowed } from "../../accounts/key-controls";
import { requestIdOf } from "../request-context";
import type { RouteDocs } from "../route-docs";
import { authenticate, holdKey, identify } from "../auth";
import { DomainError, invalidField } from "../../errors";
import { assertModelEndpoint, resolveModel } from "../../catalog/resolve";
import { OUTPUT_CEILING } from "../../catalog/catalog";
import { type ChatCall } from "../../chat/call";
import { completeForRoute, streamForRoute } from "../chat-route";
import type { ChatProtocolDeps } from "./chat";
import type { Config } from "../../config";
import type { StoredResponseRecord } from "../../billing/ledger-store";
import { newId } from "../../accounts/ids";
import { ResponsesRequest, normalizeInput, parseResponsesRequest, toChatRequest, wantsPriorityTier } from "../../protocols/responses/request";
import { responsesTools } from "../../protocols/responses/tools";
import { IGNORED_TOOLS_HEADER, ignoredToolsHeader } from "../../protocols/ignored-tools";
import { toResponseObject, type ResponseShell } from "../../protocols/responses/response";
import { ResponsesStreamTranslator, responsesFrames } from "../../protocols/responses/stream";
import { storedSize, type ResponseStore } from "../../store/responses";
import { usdFromJson } from "../../billing/money";

type Json = Record<string, unknown>;

const itemId = (prefix: string) => newId(prefix, 12);

const responseNotFound = (id: string, param: string | null = null) =>
  new DomainError("not_found", "not_found", `Response with id '${id}' not found.`, param);

/** What the Responses routes use: a chat protocol route's services, and the stored turns with their quota. */
export type ResponsesRouteDeps = ChatProtocolDeps & {
  responses: ResponseStore;
  config: Pick<Config, "responsesQuotaBytes">;
};

export function registerResponsesRoutes(app: App, s: ResponsesRouteDeps, docs: RouteDocs): void {
  const store = s.responses;
  docs.add({ method: "POST", path: "/v1/responses", summary: "OpenAI Responses protocol on the chat models, plain or streamed; stored by default.", auth: "key", body: ResponsesRequest, public: true });
  docs.add({ method: "GET", path: "/v1/responses/:id", summary: "A stored response of this account.", auth: "key" });
  docs.add({ method: "DELETE", path: "/v1/responses/:id", summary: "Deletes a stored response of this account.", auth: "key" });
  docs.add({ method: "GET", path: "/v1/responses/:id/input_items", summary: "The input items of a stored response (cursor list).", auth: "key" });

  app.post("/v1/responses", async ({ body, bearer, request, set, server }) => {
    const admitted = authenticate(s, request, bearer, set);
    // Synchronous unless the store had to be asked (PostgreSQL, a key not cached): no await then.
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "chat");
    const req = parseResponsesRequest(body);
    let history: Json[] = [];
    if (req.previous_response_id) {
      const conversation = await store.conversation(req.previous_response_id, caller.accountId);
      if (!conversation) throw responseNotFound(req.previous_response_id, "previous_response_id");
      history = conversation;
    }
    // Every item_reference resolved in one lookup before the input is normalised.
    const referenced = await store.items(referencedItemIds(req.input), caller.accountId);
    const input = normalizeInput(req.input, itemId, (id) => referenced.get(id) ?? null);
    const tools = responsesTools(req.tools as Json[] | null | undefined);
    const chatRequest = toChatRequest(req, history, input, tools);
    const resolved = resolveModel(s, req.model, "chat", wantsPriorityTier(req));
    assertModelAllowed(s, caller.key.models, req.model, resolved);
    const ceiling = Math.min(resolved.entry.maxOutputTokens, OUTPUT_CEILING);
    if (req.max_output_tokens != null && req.max_output_tokens > ceiling) {
      throw invalidField("max_output_tokens", `must be at most ${ceiling} (the output ceiling of this API), got ${req.max_output_tokens}`);
    }
    const requestId = requestIdOf(set);
    const shell: ResponseShell = {
      id: "resp_" + requestId.replace(/^req_/, ""), createdAt: store.nowSeconds(), model: resolved.requestedId, serviceTier: resolved.tier, request: req,
      toolNames: tools.byChatName,
    };
    if (tools.ignored.length > 0) set.headers[IGNORED_TOOLS_HEADER] = ignoredToolsHeader(tools.ignored);
    const call: ChatCall = { requestId, accountId: caller.accountId, endpoint: "/v1/responses", resolved, key: holdKey(caller), request: chatRequest, signal: request.signal };
    // Stored in the charge's own transaction: never charged without the turn, nor stored uncharged.
    // A turn larger than the whole storage quota is served but not stored, and says so (store: false).
    const stored = (response: Json): StoredResponseRecord | undefined => {
      if (req.store === false) return undefined;
      const record: StoredResponseRecord = {
        id: shell.id, accountId: caller.accountId, previousResponseId: req.previous_response_id ?? null, inputItems: input, response, createdAt: shell.createdAt,
        quotaBytes: s.config.responsesQuotaBytes,
      };
      if (storedSize(record) <= s.config.responsesQuotaBytes) return record;
      response.store = false;
      return undefined;
    };

    if (req.stream !== true) {
      return completeForRoute(s, call, set, (chat, result) => toResponseObject(shell, chat, result, itemId), stored);
    }

    const translator = new ResponsesStreamTranslator(shell, itemId);
    return streamForRoute(s, call, { request, server, set }, {
      start: () => responsesFrames(translator.start()),
      push: (chunk, frames) => frames.events(translator.push(chunk)),
      failed: (error) => responsesFrames(translator.fail(error.message)),
      finish(result) {
        const { events, response } = translator.finish(result);
        // Decided (and the response marked) before the frames are written. Stored with the charge,
        // before the final event: retrievable as soon as a client sees the end.
        const storedResponse = stored(response);
        return { frames: responsesFrames(events), storedResponse };
      },
    });
  });

  app.get("/v1/responses/:id", async ({ params, bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    const stored = await store.get(params.id, caller.accountId);
    if (!stored) throw responseNotFound(params.id);
    return withPlainCost(stored.response);
  });

  app.delete("/v1/responses/:id", async ({ params, bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    if (!(await store.delete(params.id, caller.accountId))) throw responseNotFound(params.id);
    return { id: params.id, object: "response", deleted: true };
  });

  app.get("/v1/responses/:id/input_items", async ({ params, query, bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    const stored = await store.get(params.id, caller.accountId);
    if (!stored) throw responseNotFound(params.id);
    return inputItemsPage(stored.inputItems, query as Record<string, string | undefined>);
  });
}

/**
 * A stored response as served: its usage.cost, a plain number again once read back from the
 * store, is written as the exact decimal (0.00000008, never 8e-8), as when it was created.
 */
function withPlainCost(response: Json): Json {
  const usage = response.usage as Json | null | undefined;
  if (!usage || typeof usage !== "object" || typeof usage.cost !== "number") return response;
  return { ...response, usage: { ...usage, cost: usdFromJson(usage.cost) } };
}

/** The ids named by item_reference inputs (checked again, with named errors, by normalizeInput). */
function referencedItemIds(input: unknown): string[] {
  if (!Array.isArray(input)) return [];
  const ids: string[] = [];
  for (const item of input as Json[]) {
    if (item?.type === "item_reference" && typeof item.id === "string" && item.id !== "") ids.push(item.id);
  }
  return ids;
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
