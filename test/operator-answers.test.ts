/**
 * Answers that say what to do (docs/configuration.md "Exposure" and docs/operate.md "Errors"): a key in a header the server does
 * not read is named in the 401; `x-api-key` works on every endpoint; an unknown model id gets the
 * closest live ids ("did you mean"), in the message and a `suggestions` field; a local model
 * without its files is 503 model_not_installed, which the SDKs do not retry.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";
import type { FakeUpstream } from "./support/fake-upstream";
import type { Harness } from "./support/harness";
import { messages } from "./support/gateway-client";
import OpenAI from "openai";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  ({ fake, h, acct } = await startFakeStack());
});
afterAll(() => stopFakeStack(h, fake));

const chatBody = (model = "glm-4.6") => JSON.stringify({ model, messages });

async function post(path: string, headers: Record<string, string>, body: string) {
  const res = await fetch(h.base + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: res.status, text: await res.text() };
}

describe("a key where the server does not read it", () => {
  test.each([
    ["Authorization without 'Bearer '", (k: string) => ({ authorization: k }), "without the 'Bearer ' scheme"],
    ["Authorization: Basic", (k: string) => ({ authorization: `Basic ${btoa("user:" + k)}` }), "'Basic' scheme"],
    ["Authorization: Bearer with no key", () => ({ authorization: "Bearer " }), "Bearer scheme but no key"],
    ["Azure's api-key header", (k: string) => ({ "api-key": k }), "'api-key' header (Azure style)"],
  ])("%s: 401 naming where it was and where it goes, never echoing it", async (_, headers, says) => {
    const r = await post("/v1/chat/completions", headers(acct.key), chatBody());
    expect(r.status).toBe(401);
    expect(r.text).not.toContain(acct.key);
    const err = JSON.parse(r.text).error;
    expect(err.code).toBe("missing_api_key");
    expect(err.message).toContain(says);
    expect(err.message).toContain("Authorization: Bearer <key>");
  });

  test("an Authorization value that is not a known scheme is not echoed (it may be the key)", async () => {
    const r = await post("/v1/chat/completions", { authorization: `${acct.key} extra` }, chatBody());
    expect(r.status).toBe(401);
    expect(r.text).not.toContain(acct.key);
  });

  test("no key at all still says so", async () => {
    const r = await post("/v1/chat/completions", {}, chatBody());
    expect(r.status).toBe(401);
    expect(JSON.parse(r.text).error.message).toContain("You didn't provide an API key");
  });

  test("a key in the query string is still credential_in_query", async () => {
    const r = await post(`/v1/chat/completions?api_key=${acct.key}`, { "x-api-key": acct.key }, chatBody());
    expect(r.status).toBe(401);
    expect(JSON.parse(r.text).error.code).toBe("credential_in_query");
  });
});

describe("x-api-key on every endpoint", () => {
  test("chat completions", async () => {
    const r = await post("/v1/chat/completions", { "x-api-key": acct.key }, chatBody());
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).object).toBe("chat.completion");
  });

  test("responses", async () => {
    const r = await post("/v1/responses", { "x-api-key": acct.key }, JSON.stringify({ model: "glm-4.6", input: "hi" }));
    expect(r.status).toBe(200);
  });

  test("usage and key info (GET)", async () => {
    for (const path of ["/v1/usage", "/v1/key"]) {
      const res = await fetch(h.base + path, { headers: { "x-api-key": acct.key } });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      await res.arrayBuffer();
    }
  });

  test("messages (as before)", async () => {
    const r = await post("/v1/messages", { "x-api-key": acct.key, "anthropic-version": "2023-06-01" }, JSON.stringify({ model: "glm-4.6", max_tokens: 16, messages }));
    expect(r.status).toBe(200);
  });

  test("the OpenAPI description offers it beside Bearer", async () => {
    const doc = (await (await fetch(h.base + "/docs/openapi.json")).json()) as any;
    expect(doc.components.securitySchemes.apiKeyHeader).toEqual({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
  });

  test("a wrong x-api-key is invalid_api_key", async () => {
    const r = await post("/v1/chat/completions", { "x-api-key": "sy-not-a-real-key" }, chatBody());
    expect(r.status).toBe(401);
    expect(JSON.parse(r.text).error.code).toBe("invalid_api_key");
  });
});

describe("did you mean", () => {
  test.each([
    ["GLM-4.6", ["glm-4.6"]],
    ["z-ai/glm-4.6", ["glm-4.6"]],
    ["glm-4.5", ["glm-4.6"]],
  ])("%s → 404 model_not_found suggesting %p", async (model, suggestions) => {
    const r = await post("/v1/chat/completions", { authorization: `Bearer ${acct.key}` }, chatBody(model));
    expect(r.status).toBe(404);
    const err = JSON.parse(r.text).error;
    expect(err.code).toBe("model_not_found");
    expect(err.suggestions).toEqual(suggestions);
    expect(err.message).toContain(`Did you mean '${suggestions[0]}'?`);
  });

  test("openai/gpt-4o: nothing close, no suggestions field", async () => {
    const r = await post("/v1/chat/completions", { authorization: `Bearer ${acct.key}` }, chatBody("openai/gpt-4o"));
    expect(r.status).toBe(404);
    const err = JSON.parse(r.text).error;
    expect(err.code).toBe("model_not_found");
    expect(err.suggestions).toBeUndefined();
    expect(err.message).not.toContain("Did you mean");
  });

  test("only live ids of the endpoint's kind: embeddings without files suggest no chat model", async () => {
    const r = await post("/v1/embeddings", { authorization: `Bearer ${acct.key}` }, JSON.stringify({ model: "Embedding-300m", input: "hi" }));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).error.suggestions).toBeUndefined();
  });

  test("Messages (Anthropic shape) carries the hint in its message", async () => {
    const r = await post("/v1/messages", { "x-api-key": acct.key }, JSON.stringify({ model: "GLM-4.6", max_tokens: 16, messages }));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).error.message).toContain("Did you mean 'glm-4.6'?");
  });

  test("GET /v1/models/{id}", async () => {
    const res = await fetch(h.base + "/v1/models/z-ai/glm-4.6");
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.suggestions).toEqual(["glm-4.6"]);
  });
});

describe("a local model without its files", () => {
  test("the openai SDK, retries on, sends the request once: no Retry-After, x-should-retry: false", async () => {
    let calls = 0;
    const counting: typeof fetch = Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
      calls++;
      return fetch(input, init);
    }, { preconnect: fetch.preconnect });
    const client = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 2, fetch: counting });
    const err = (await client.embeddings.create({ model: "embedding-300m", input: "hi" }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.code).toBe("model_not_installed");
    expect(err.message).toContain("switchyard models pull embedding-300m");
    expect(calls).toBe(1);
  });

  test("its type is api_error, not overloaded_error (x-api-key works on speech too)", async () => {
    const r = await post("/v1/audio/speech", { "x-api-key": acct.key }, JSON.stringify({ model: "voice-82m", input: "hi", voice: "af_heart" }));
    expect(r.status).toBe(503);
    expect(JSON.parse(r.text).error.type).toBe("api_error");
  });
});
