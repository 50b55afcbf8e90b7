/**
 * The model check every endpoint makes, in one order: does the id exist (404), does it belong
 * to this endpoint (400 wrong_endpoint naming the right one), is it live (503).
 */
import type { Services } from "../services";
import { ENDPOINT_OF_KIND, type ModelKind, type ResolvedModel } from "./catalog";
import { modelNotFound, modelUnavailable, wrongEndpoint } from "../http/errors";

export function resolveModel(s: Services, modelId: string, kind: ModelKind, priorityHint = false): ResolvedModel {
  const resolved = s.catalog.resolve(modelId, priorityHint);
  if (!resolved) throw modelNotFound(modelId);
  if (resolved.entry.kind !== kind) throw wrongEndpoint(modelId, ENDPOINT_OF_KIND[resolved.entry.kind]);
  if (!s.isLive(resolved.entry)) throw modelUnavailable(modelId);
  return resolved;
}
