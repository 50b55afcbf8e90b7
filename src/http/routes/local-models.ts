/**
 * POST /v1/audio/speech and POST /v1/embeddings until their engines are wired in:
 * authentication and the model checks run as they will for real, so a wrong-endpoint model
 * gets its 400 and a speech/embedding model answers 503 model_unavailable while not loaded.
 */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { authenticate } from "../auth";
import { resolveModel } from "../../catalog/resolve";
import { validate } from "../validate";
import { Type } from "@sinclair/typebox";
import { modelUnavailable } from "../errors";

const ModelOnly = Type.Object({ model: Type.String({ minLength: 1 }) }, { additionalProperties: true });

export function registerLocalModelRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/audio/speech", summary: "Text to speech (voice-82m).", auth: "key", produces: "audio/mpeg", public: true });
  docs.add({ method: "POST", path: "/v1/embeddings", summary: "Text embeddings (embedding-300m).", auth: "key", public: true });

  app.post("/v1/audio/speech", ({ body, bearer, request }) => {
    authenticate(s, request, bearer);
    const b = validate(ModelOnly, body);
    const r = resolveModel(s, b.model, "speech");
    throw modelUnavailable(r.requestedId);
  });
  app.post("/v1/embeddings", ({ body, bearer, request }) => {
    authenticate(s, request, bearer);
    const b = validate(ModelOnly, body);
    const r = resolveModel(s, b.model, "embedding");
    throw modelUnavailable(r.requestedId);
  });
}
