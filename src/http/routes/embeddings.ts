/**
 * POST /v1/embeddings until the embedding engine is wired in: authentication and the model checks
 * run as they will for real, so a wrong-endpoint model gets its 400 and embedding-300m answers
 * 503 model_unavailable while its weights are not loaded.
 */
import { Type } from "@sinclair/typebox";
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { authenticate } from "../auth";
import { resolveModel } from "../../catalog/resolve";
import { validate } from "../validate";
import { modelUnavailable } from "../errors";

const ModelOnly = Type.Object({ model: Type.String({ minLength: 1 }) }, { additionalProperties: true });

export function registerEmbeddingsRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/embeddings", summary: "Text embeddings (embedding-300m).", auth: "key", public: true });
  app.post("/v1/embeddings", ({ body, bearer, request }) => {
    authenticate(s, request, bearer);
    const b = validate(ModelOnly, body);
    throw modelUnavailable(resolveModel(s, b.model, "embedding").requestedId);
  });
}
