/**
 * POST /v1/audio/speech until the speech engine is wired in: authentication and the model checks
 * run as they will for real, so a wrong-endpoint model gets its 400 and voice-82m answers
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

export function registerSpeechRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "POST", path: "/v1/audio/speech", summary: "Text to speech (voice-82m).", auth: "key", produces: "audio/mpeg", public: true });
  app.post("/v1/audio/speech", ({ body, bearer, request }) => {
    authenticate(s, request, bearer);
    const b = validate(ModelOnly, body);
    throw modelUnavailable(resolveModel(s, b.model, "speech").requestedId);
  });
}
