/**
 * The account view's playground: chat (streamed), speech and embeddings, each a real request
 * through the normal endpoint (/v1/chat/completions, /v1/audio/speech, /v1/embeddings), made
 * inside this server with the key the session signed in with. So it is validated, limited and
 * billed exactly like any client's request, and the page never holds the key. The answer comes
 * back as the endpoint made it (streams stay streams), with the request's id in
 * x-generation-id so the page can show its generation record (and cost) from the ledger.
 */
import type { App } from "../route-module";
import { invalidField, notFound } from "../../errors";
import { dashboardHeaders } from "../../dashboard/assets";
import type { DashboardGuard } from "./guard";

const ENDPOINTS = {
  chat: "/v1/chat/completions",
  speech: "/v1/audio/speech",
  embeddings: "/v1/embeddings",
} as const;

type PlaygroundKind = keyof typeof ENDPOINTS;

/**
 * The endpoint of a playground kind from the URL, or null. An own-property check: `in` (or a
 * plain index) also finds Object.prototype's members, so "constructor" would name a function.
 */
function endpointOf(kind: string): string | null {
  return Object.hasOwn(ENDPOINTS, kind) ? ENDPOINTS[kind as PlaygroundKind] : null;
}

export function registerPlayground(app: App, guard: DashboardGuard): void {
  app.post("/dashboard/api/account/playground/:kind", async ({ request, set, params, body }) => {
    const session = await guard.session(request, "account");
    dashboardHeaders(set);
    const endpoint = endpointOf(params.kind);
    if (!endpoint) throw notFound(`No playground '${params.kind}': use chat, speech or embeddings.`);
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw invalidField("body", "must be a JSON object: the endpoint's own request");
    }
    const inner = new Request(new URL(endpoint, request.url), {
      method: "POST",
      headers: { authorization: `Bearer ${session.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      // The page closing or cancelling ends the inner request too (and its billing rules apply).
      signal: request.signal,
    });
    const answer = await app.handle(inner);
    const headers = new Headers(answer.headers);
    headers.set("x-generation-id", answer.headers.get("x-request-id") ?? "");
    for (const [name, value] of Object.entries(set.headers)) if (typeof value === "string" && !headers.has(name)) headers.set(name, value);
    return new Response(answer.body, { status: answer.status, headers });
  });
}
