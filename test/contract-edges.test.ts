/**
 * Edges of the contract found in review: the wrong-endpoint answer wins over body-shape errors,
 * malformed ids and repeated query parameters are 4xx (never 500 or silently ignored), limit
 * overrides are bounded, and every authenticated endpoint reports the rate headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, type Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => ({ fake, h, acct } = await startFakeStack()));
afterAll(() => stopFakeStack(h, fake));

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(h.base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe("a model sent to the wrong endpoint is named as such, whatever the body's shape", () => {
  test.each([
    ["/v1/chat/completions", { model: "voice-82m", input: "hi", voice: "af_heart" }, "POST /v1/audio/speech"],
    ["/v1/chat/completions", { model: "embedding-300m", input: "hi" }, "POST /v1/embeddings"],
    ["/v1/audio/speech", { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] }, "POST /v1/chat/completions"],
    ["/v1/embeddings", { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] }, "POST /v1/chat/completions"],
    ["/v1/messages", { model: "embedding-300m", input: "hi" }, "POST /v1/embeddings"],
    ["/v1/responses", { model: "voice-82m", voice: "af_heart" }, "POST /v1/audio/speech"],
  ] as const)("%s with %j", async (path, body, endpoint) => {
    const r = await post(path, body);
    expect(r.status).toBe(400);
    // Both error shapes keep the message under `error`; only OpenAI's has a code.
    expect(r.body.error.message).toContain(endpoint);
    if (path === "/v1/messages") expect(r.body.error.type).toBe("invalid_request_error");
    else expect(r.body.error.code).toBe("wrong_endpoint");
  });
});

test("GET /v1/models/{id} with broken percent-encoding is a 404, not a 500", async () => {
  const res = await fetch(h.base + "/v1/models/%E0%A4%A");
  expect(res.status).toBe(404);
  expect(((await res.json()) as any).error.code).toBe("model_not_found");
});

describe("GET /v1/usage query parameters", () => {
  test.each([
    ["group_by=day&group_by=model", "group_by"],
    ["start[]=2026-01-01", "start[]"],
    ["bogus=1", "bogus"],
  ])("%s → 400 naming %s", async (query, param) => {
    const res = await fetch(`${h.base}/v1/usage?${query}`, { headers: { authorization: `Bearer ${acct.key}` } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe(param);
  });
});

test.each([
  [{ rate_limit_rpm: 1e300 }, "rate_limit_rpm"],
  [{ rate_limit_rpm: 10_000_001 }, "rate_limit_rpm"],
  [{ concurrency_limit: 1_000_001 }, "concurrency_limit"],
])("PATCH %j → 400 naming the field; the account is unchanged", async (patch, field) => {
  const res = await fetch(`${h.base}/admin/accounts/${acct.id}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(patch),
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as any).error.param).toBe(field);
  const after = (await h.admin("GET", `/admin/accounts/${acct.id}`)).body;
  expect([after.rate_limit_rpm, after.concurrency_limit]).toEqual([600, 32]);
});

describe("authenticated endpoints that do no model work still report the rate", () => {
  test("count_tokens, usage, and the stored-response endpoints carry x-ratelimit-* headers", async () => {
    const created = await post("/v1/responses", { model: "glm-4.6", input: "hi" });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const responses = [
      await fetch(h.base + "/v1/messages/count_tokens", {
        method: "POST",
        headers: { "x-api-key": acct.key, "content-type": "application/json" },
        body: JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: "hi" }] }),
      }),
      await fetch(h.base + "/v1/usage", { headers: { authorization: `Bearer ${acct.key}` } }),
      await fetch(`${h.base}/v1/responses/${id}`, { headers: { authorization: `Bearer ${acct.key}` } }),
      await fetch(`${h.base}/v1/responses/${id}/input_items`, { headers: { authorization: `Bearer ${acct.key}` } }),
      await fetch(`${h.base}/v1/responses/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${acct.key}` } }),
    ];
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("600");
      expect(res.headers.get("x-ratelimit-remaining-requests")).not.toBeNull();
      expect(res.headers.get("x-ratelimit-reset-requests")).not.toBeNull();
    }
  });
});
