/**
 * POST /v1/embeddings (docs/local-models.md): validate, tokenise (exact counts), then one metered
 * call (metering/) of the exact cost: every input queued on the embedding engine's micro-batching
 * scheduler, charged, answered in the OpenAI list shape. Nothing is billed when the request fails
 * or the client goes away first.
 */
import { Type } from "@sinclair/typebox";
import { assertModelAllowed } from "../../accounts/key-controls";
import type { App } from "../route-module";
import { requestIdOf } from "../request-context";
import type { RouteDocs } from "../route-docs";
import { authenticate, holdKey, type KeyAuthDeps } from "../auth";
import type { Ledger } from "../../billing/ledger";
import type { EngineRegistry } from "../../engines/registry";
import { assertModelEndpoint, resolveModel, type ModelResolver } from "../../catalog/resolve";
import { validate } from "../../validate";
import { DomainError, clientGone, invalidField, modelUnavailable } from "../../errors";
import { embeddingCost, priceNote } from "../../billing/prices";
import { meterWhole, type CallSpec } from "../../metering/metered-call";
import { formatUsd } from "../../billing/money";
import { localModelUnavailable } from "../../engines/installed";
import { timeEngine } from "../../metrics/engine-time";
import { EMBEDDING_MODEL_ID, MAX_SEQUENCE_TOKENS, type EmbeddingEngine } from "../../engines/embeddings/engine";
import { parseEmbeddingInput } from "../../engines/embeddings/input";
import { embeddingsBody } from "../../engines/embeddings/response-body";
import { INPUT_TYPES, isInputType } from "../../engines/embeddings/prompts";
import { JobAbortedError, QueueFullError, SchedulerClosedError } from "../../engines/scheduler/index";

export const EmbeddingsRequest = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Unknown({
      description: "a string, an array of strings, an array of token ids, or an array of token-id arrays (1–2,048 entries, each ≤ 2,048 tokens)",
      examples: ["The food was delicious.", ["first text", "second text"], [1, 2, 3], [[1, 2], [3, 4]]],
    }),
    encoding_format: Type.Optional(Type.Union([Type.Literal("float"), Type.Literal("base64")])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: 768 })),
    input_type: Type.Optional(Type.String({ description: `task prompt: one of ${INPUT_TYPES.join(", ")}` })),
    user: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** Seconds a client is told to wait when the queue is full: one or two batches' time. */
const QUEUE_FULL_RETRY_AFTER = 1;

function mapEngineError(err: unknown, model: string): unknown {
  if (err instanceof QueueFullError) {
    return new DomainError("unavailable", "model_unavailable", `The model '${model}' is overloaded (its queue is full). Retry after ${QUEUE_FULL_RETRY_AFTER} second(s).`, "model", QUEUE_FULL_RETRY_AFTER);
  }
  if (err instanceof SchedulerClosedError) return modelUnavailable(model);
  if (err instanceof JobAbortedError) return clientGone();
  return err;
}

/** What POST /v1/embeddings uses: the caller's key and admission, the model's resolution, the engine and the ledger. */
export type EmbeddingsRouteDeps = KeyAuthDeps & ModelResolver & {
  engines: Pick<EngineRegistry, "get">;
  ledger: Ledger;
};

export function registerEmbeddingsRoutes(app: App, s: EmbeddingsRouteDeps, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/embeddings", summary: "Text embeddings (embedding-300m), micro-batched in-process.", auth: "key", body: EmbeddingsRequest, public: true });

  app.post("/v1/embeddings", async ({ body, bearer, request, set }) => {
    const admitted = authenticate(s, request, bearer, set);
    // Synchronous unless the store had to be asked (PostgreSQL, a key not cached): no await then.
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "embedding");
    const req = validate(EmbeddingsRequest, body);
    const resolved = resolveModel(s, req.model, "embedding");
    assertModelAllowed(s, caller.key.models, req.model, resolved);
    const engine = s.engines.get<EmbeddingEngine>(resolved.entry.id);
    if (!engine || resolved.entry.id !== EMBEDDING_MODEL_ID) throw localModelUnavailable(s, req.model, resolved.entry.id);
    if (req.input_type !== undefined && !isInputType(req.input_type)) {
      throw invalidField("input_type", `must be one of ${INPUT_TYPES.join(", ")}`);
    }
    if (req.dimensions !== undefined && req.dimensions > engine.dimensions) {
      throw invalidField("dimensions", `must be at most ${engine.dimensions}`);
    }
    const inputType = req.input_type as Parameters<typeof parseEmbeddingInput>[3];
    const parsed = await parseEmbeddingInput(req.input, engine.encoder, MAX_SEQUENCE_TOKENS, inputType);

    const requestId = requestIdOf(set);
    const dims = req.dimensions ?? engine.dimensions;
    const format = req.encoding_format === "base64" ? "base64" : "float";
    const spec: CallSpec = {
      requestId, accountId: caller.accountId, endpoint: "/v1/embeddings", model: resolved.requestedId, key: holdKey(caller), serviceTier: resolved.tier,
      budget: { inputTokens: parsed.tokens },
      price: (u) => embeddingCost(resolved.entry, resolved.multiplier, u.inputTokens ?? 0),
      priceNote: priceNote(resolved.entry, resolved.multiplier),
    };
    const { value: vectors, settlement } = await meterWhole(s.ledger, spec, async () => {
      // Each vector comes back from the engine as the JSON text of its `embedding` value
      // (engine.ts embedEncoded), so the body is spliced from strings (docs/local-models.md "Embeddings").
      let vectors: string[];
      try {
        vectors = await timeEngine(requestId, engine.embedEncoded(parsed.sequences, { dims, format }, { priority: resolved.tier === "priority", signal: request.signal, account: caller.accountId }));
      } catch (err) {
        throw mapEngineError(err, req.model);
      }
      if (request.signal.aborted) throw clientGone();
      return { usage: { inputTokens: parsed.tokens }, value: vectors };
    });
    const cost = formatUsd(settlement.charged);
    set.headers["x-request-cost"] = cost;
    set.headers["content-type"] = "application/json";
    return embeddingsBody(vectors, resolved.requestedId, { prompt_tokens: parsed.tokens, total_tokens: parsed.tokens, cost });
  });
}
