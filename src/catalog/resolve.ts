/**
 * The model check every endpoint makes, in one order: does the id exist (404), does it belong
 * to this endpoint (400 wrong_endpoint naming the right one), is it live (503).
 */
import type { Services } from "../services";
import { ENDPOINT_OF_KIND, type ModelKind, type ResolvedModel } from "./catalog";
import { modelNotFound, modelUnavailable, wrongEndpoint } from "../errors";

export function resolveModel(s: Services, modelId: string, kind: ModelKind, priorityHint = false): ResolvedModel {
  const resolved = s.catalog.resolve(modelId, priorityHint);
  if (!resolved) throw modelNotFound(modelId);
  if (resolved.entry.kind !== kind) throw wrongEndpoint(modelId, ENDPOINT_OF_KIND[resolved.entry.kind]);
  if (!s.isLive(resolved.entry)) throw modelUnavailable(modelId);
  return resolved;
}

/**
 * Runs before body validation: a model id that exists but belongs to another endpoint gets the
 * wrong_endpoint 400 naming that endpoint, even when the rest of the body is shaped for it
 * (a speech body sent to chat lacks `messages`, and "wrong endpoint" is the useful answer).
 */
export function assertModelEndpoint(s: Services, body: unknown, kind: ModelKind): void {
  const modelId = (body as { model?: unknown } | null)?.model;
  if (typeof modelId !== "string") return;
  const resolved = s.catalog.resolve(modelId);
  if (resolved && resolved.entry.kind !== kind) throw wrongEndpoint(modelId, ENDPOINT_OF_KIND[resolved.entry.kind]);
}
