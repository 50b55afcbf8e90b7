/**
 * The model check every endpoint makes, in one order: does the id exist (404), does it belong
 * to this endpoint (400 wrong_endpoint naming the right one), is it live (503; 404 for a chat
 * model no upstream lists).
 */
import type { Config } from "../config";
import type { RouteRegistry } from "../upstream/registry";
import type { ModelAliases } from "./aliases";
import { ENDPOINT_OF_KIND, type Catalog, type ModelKind, type ResolvedModel } from "./catalog";
import type { ModelList } from "./catalog-view";
import { modelNotFound, modelUnavailable, wrongEndpoint } from "../errors";
import { localModelUnavailable } from "../engines/installed";
import { suggestModels } from "./suggest";

/** Where a requested id is looked up: the catalog, then the aliases (SWITCHYARD_MODEL_ALIASES). */
export interface ModelIds {
  catalog: Pick<Catalog, "resolve">;
  aliases: Pick<ModelAliases, "target">;
}

/** What resolving a request's model reads: the ids, the live model list, the routes and the local model files. */
export interface ModelResolver extends ModelIds, ModelList {
  catalog: Catalog;
  routes: Pick<RouteRegistry, "offeredVersion" | "unlisted">;
  config: Pick<Config, "modelsDir">;
}

/**
 * The catalog entry for a requested id, or for the public id it is an alias of (a real catalog
 * id is never aliased). The result's `requestedId` is then the target, which is what the
 * request is billed and reported as.
 */
export function resolveId(s: ModelIds, modelId: string, priorityHint = false): ResolvedModel | null {
  const direct = s.catalog.resolve(modelId, priorityHint);
  if (direct) return direct;
  const target = s.aliases.target(modelId);
  return target === null ? null : s.catalog.resolve(target, priorityHint);
}

export function resolveModel(s: ModelResolver, modelId: string, kind: ModelKind, priorityHint = false): ResolvedModel {
  const resolved = resolveId(s, modelId, priorityHint);
  if (!resolved) throw modelNotFound(modelId, suggestModels(s, modelId, kind));
  if (resolved.entry.kind !== kind) throw wrongEndpoint(modelId, ENDPOINT_OF_KIND[resolved.entry.kind]);
  if (!s.isLive(resolved.entry)) {
    // A chat model whose upstreams all list other models is not served here at all (README,
    // "Serve your own model"): not found, rather than "try again later".
    if (resolved.entry.kind === "chat" && s.routes.unlisted?.(resolved.entry.id)) throw modelNotFound(modelId, suggestModels(s, modelId, kind));
    throw resolved.entry.kind === "chat" ? modelUnavailable(modelId) : localModelUnavailable(s, modelId, resolved.entry.id);
  }
  return resolved;
}

/**
 * Runs before body validation: a model id that exists but belongs to another endpoint gets the
 * wrong_endpoint 400 naming that endpoint, even when the rest of the body is shaped for it
 * (a speech body sent to chat lacks `messages`, and "wrong endpoint" is the useful answer).
 */
export function assertModelEndpoint(s: ModelIds, body: unknown, kind: ModelKind): void {
  const modelId = (body as { model?: unknown } | null)?.model;
  if (typeof modelId !== "string") return;
  const resolved = resolveId(s, modelId);
  if (resolved && resolved.entry.kind !== kind) throw wrongEndpoint(modelId, ENDPOINT_OF_KIND[resolved.entry.kind]);
}
