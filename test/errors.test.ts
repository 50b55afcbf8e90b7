/**
 * Errors over real HTTP (docs/operate.md, "Errors"): every bad input gets its status, the exact OpenAI error
 * shape, an x-request-id, and leaves the ledger untouched; each status maps to the official
 * `openai` SDK's matching error class.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { startHarness, type Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";
import { errorOf } from "./support/sdk-error";
import { ledgerState, type LedgerState } from "./support/ledger-state";

const MODEL = "glm-4.6";
const messages = [{ role: "user", content: "hi" }];

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
let client: OpenAI;

beforeAll(async () => {
  ({ fake, h, acct } = await startFakeStack());
  client = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 0 });
});
afterAll(() => stopFakeStack(h, fake));

/** The whole store's ledger state: no entry, no hold, no reservation may appear on an error. */
function storeState(): { account: LedgerState; allEntries: number; allHolds: number } {
  const db = h.db;
  const n = (sql: string) => (db.query(sql).get() as { n: number }).n;
  return { account: ledgerState(h, acct.id), allEntries: n("SELECT COUNT(*) AS n FROM ledger_entries"), allHolds: n("SELECT COUNT(*) AS n FROM holds") };
}

interface Raw {
  method?: string;
  path?: string;
  body?: string | Record<string, unknown>;
  key?: string | null;
  headers?: Record<string, string>;
}

async function raw(r: Raw, target: Harness = h): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { "content-type": "application/json", ...r.headers };
  const key = r.key === undefined ? acct.key : r.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(target.base + (r.path ?? "/v1/chat/completions"), {
    method: r.method ?? "POST",
    headers,
    body: r.body === undefined ? undefined : typeof r.body === "string" ? r.body : JSON.stringify(r.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body };
}

/**
 * Exactly {error:{message,type,param,code}} (plus `suggestions` on a model_not_found that has
 * close live ids), a request id, and the given status/code/param.
 */
function expectError(res: { status: number; headers: Headers; body: any }, status: number, code: string, param?: string | null) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body)).toEqual(["error"]);
  const fields = ["code", "message", "param", "type"];
  if (code === "model_not_found" && "suggestions" in res.body.error) fields.push("suggestions");
  expect(Object.keys(res.body.error).sort()).toEqual(fields.sort());
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(10);
  expect(typeof res.body.error.type).toBe("string");
  if (param !== undefined) expect(res.body.error.param).toBe(param);
  expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  expect(res.headers.get("content-type")).toStartWith("application/json");
}

describe("bad input on chat completions: 400 naming the field, ledger unchanged", () => {
  const cases: [string, Raw, number, string, string | null, RegExp?][] = [
    ["malformed JSON", { body: '{"model": "glm-4.6", "messages": [' }, 400, "invalid_json", null, /JSON/],
    ["a JSON array body", { body: "[1,2]" }, 400, "invalid_request_error", null, /JSON object/],
    ["an empty body", { body: "" }, 400, "invalid_request_error", null],
    ["missing model", { body: { messages } }, 400, "missing_required_parameter", "model", /model/],
    ["missing messages", { body: { model: MODEL } }, 400, "missing_required_parameter", "messages", /messages/],
    ["model of the wrong type", { body: { model: 5, messages } }, 400, "invalid_value", "model", /string/],
    ["empty model", { body: { model: "", messages } }, 400, "invalid_value", "model"],
    ["messages not an array", { body: { model: MODEL, messages: "hi" } }, 400, "invalid_value", "messages", /array/],
    ["empty messages", { body: { model: MODEL, messages: [] } }, 400, "invalid_value", "messages", /empty/],
    ["unknown role", { body: { model: MODEL, messages: [{ role: "robot", content: "x" }] } }, 400, "invalid_value", "messages[0].role"],
    ["missing role", { body: { model: MODEL, messages: [{ content: "x" }] } }, 400, "missing_required_parameter", "messages[0].role"],
    ["content of the wrong type", { body: { model: MODEL, messages: [{ role: "user", content: 7 }] } }, 400, "invalid_value", "messages[0].content"],
    ["stream not a boolean", { body: { model: MODEL, messages, stream: "yes" } }, 400, "invalid_value", "stream", /boolean/],
    ["max_tokens a string", { body: { model: MODEL, messages, max_tokens: "10" } }, 400, "invalid_value", "max_tokens"],
    ["max_tokens zero", { body: { model: MODEL, messages, max_tokens: 0 } }, 400, "invalid_value", "max_tokens"],
    ["max_tokens above 32768", { body: { model: MODEL, messages, max_tokens: 32769 } }, 400, "invalid_value", "max_tokens", /32768/],
    ["max_completion_tokens above 32768", { body: { model: MODEL, messages, max_completion_tokens: 40000 } }, 400, "invalid_value", "max_completion_tokens", /32768/],
    ["a speech model on chat", { body: { model: "voice-82m", messages } }, 400, "wrong_endpoint", "model", /POST \/v1\/audio\/speech/],
    ["a turbo speech model on chat", { body: { model: "voice-82m-turbo", messages } }, 400, "wrong_endpoint", "model", /POST \/v1\/audio\/speech/],
    ["an embedding model on chat", { body: { model: "embedding-300m", messages } }, 400, "wrong_endpoint", "model", /POST \/v1\/embeddings/],
    ["an unknown model", { body: { model: "gpt-nonexistent", messages } }, 404, "model_not_found", "model", /gpt-nonexistent/],
    ["-turbo of a model without turbo", { body: { model: "kimi-linear-48b-a3b-turbo", messages } }, 404, "model_not_found", "model"],
    ["a chat model on speech", { path: "/v1/audio/speech", body: { model: MODEL, input: "hi", voice: "af_heart" } }, 400, "wrong_endpoint", "model", /POST \/v1\/chat\/completions/],
    ["a chat model on embeddings", { path: "/v1/embeddings", body: { model: MODEL, input: "hi" } }, 400, "wrong_endpoint", "model", /POST \/v1\/chat\/completions/],
    ["an embedding model on speech", { path: "/v1/audio/speech", body: { model: "embedding-300m", input: "hi", voice: "af_heart" } }, 400, "wrong_endpoint", "model", /POST \/v1\/embeddings/],
    ["a speech model on embeddings", { path: "/v1/embeddings", body: { model: "voice-82m", input: "hi" } }, 400, "wrong_endpoint", "model", /POST \/v1\/audio\/speech/],
    ["speech without an engine", { path: "/v1/audio/speech", body: { model: "voice-82m", input: "hi", voice: "af_heart" } }, 503, "model_not_installed", "model"],
    ["turbo speech without an engine", { path: "/v1/audio/speech", body: { model: "voice-82m-turbo", input: "hi", voice: "af_heart" } }, 503, "model_not_installed", "model"],
    ["embeddings without an engine", { path: "/v1/embeddings", body: { model: "embedding-300m", input: "hi" } }, 503, "model_not_installed", "model"],
    ["no API key", { key: null, body: { model: MODEL, messages } }, 401, "missing_api_key", null],
    ["an unknown API key", { key: "sy-not-a-real-key", body: { model: MODEL, messages } }, 401, "invalid_api_key", null],
    ["no API key on speech", { key: null, path: "/v1/audio/speech", body: { model: "voice-82m", input: "hi", voice: "af_heart" } }, 401, "missing_api_key", null],
    ["no API key on embeddings", { key: null, path: "/v1/embeddings", body: { model: "embedding-300m", input: "hi" } }, 401, "missing_api_key", null],
    ["the base address with /chat/completions", { path: "/v1/chat/completions/chat/completions", body: { model: MODEL, messages } }, 404, "not_found", null, /must end at \/v1/],
    ["a doubled /v1", { path: "/v1/v1/chat/completions", body: { model: MODEL, messages } }, 404, "not_found", null, /must end at \/v1/],
    ["GET on chat completions", { method: "GET", path: "/v1/chat/completions" }, 405, "method_not_allowed", null, /POST/],
    ["DELETE on embeddings", { method: "DELETE", path: "/v1/embeddings" }, 405, "method_not_allowed", null, /POST/],
    ["an unknown path", { method: "GET", path: "/v1/nothing-here" }, 404, "not_found", null],
  ];

  for (const [name, req, status, code, param, message] of cases) {
    test(`${name} → ${status} ${code}`, async () => {
      const before = storeState();
      const res = await raw(req);
      expectError(res, status, code, param);
      if (message) expect(res.body.error.message).toMatch(message);
      expect(JSON.stringify(res.body)).not.toContain("127.0.0.1");
      expect(storeState()).toEqual(before);
    });
  }

  test("405 names the allowed methods in an Allow header", async () => {
    const res = await raw({ method: "GET", path: "/v1/chat/completions" });
    expect(res.headers.get("allow")).toContain("POST");
  });

  test("no request reached the upstream for any of these", () => {
    expect(fake.requests).toEqual([]);
  });
});

describe("each status maps to the openai SDK's error class", () => {
  test("400 → BadRequestError, with param and code", async () => {
    const err = await errorOf(client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 99999 }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.param).toBe("max_tokens");
    expect(err.type).toBe("invalid_request_error");
    expect(err.requestID).toMatch(/^req_/);
  });

  test("400 wrong_endpoint from the speech and embeddings SDK methods", async () => {
    const speech = await errorOf(client.audio.speech.create({ model: MODEL, voice: "alloy", input: "hi" }));
    expect(speech).toBeInstanceOf(OpenAI.BadRequestError);
    expect(speech.code).toBe("wrong_endpoint");
    expect(speech.message).toContain("POST /v1/chat/completions");
    const emb = await errorOf(client.embeddings.create({ model: MODEL, input: "hi" }));
    expect(emb).toBeInstanceOf(OpenAI.BadRequestError);
    expect(emb.message).toContain("POST /v1/chat/completions");
    const chat = await errorOf(client.chat.completions.create({ model: "embedding-300m", messages: [{ role: "user", content: "x" }] }));
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
    expect(chat.message).toContain("POST /v1/embeddings");
  });

  test("401 → AuthenticationError: unknown key and revoked key", async () => {
    const wrong = new OpenAI({ apiKey: "sy-wrong", baseURL: h.base + "/v1", maxRetries: 0 });
    const err = await errorOf(wrong.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.code).toBe("invalid_api_key");

    const a = await h.account(1, "revoked");
    const keys = await h.admin("GET", `/admin/accounts/${a.id}/keys`);
    const before = ledgerState(h, a.id);
    const revoked = await h.admin("DELETE", `/admin/keys/${keys.body.data[0].id}`);
    expect(revoked.body).toMatchObject({ revoked: true });
    const c = new OpenAI({ apiKey: a.key, baseURL: h.base + "/v1", maxRetries: 0 });
    const e2 = await errorOf(c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
    expect(e2).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e2.code).toBe("invalid_api_key");
    expect(ledgerState(h, a.id)).toEqual(before);
  });

  test("403 → PermissionDeniedError for a disabled account; enabling it again works", async () => {
    const a = await h.account(1, "disabled");
    expect((await h.admin("PATCH", `/admin/accounts/${a.id}`, { disabled: true })).status).toBe(200);
    const before = ledgerState(h, a.id);
    const c = new OpenAI({ apiKey: a.key, baseURL: h.base + "/v1", maxRetries: 0 });
    const err = await errorOf(c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.code).toBe("account_disabled");
    expect(ledgerState(h, a.id)).toEqual(before);
    await h.admin("PATCH", `/admin/accounts/${a.id}`, { disabled: false });
    const ok = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] });
    expect(ok.choices.length).toBe(1);
  });

  test("404 → NotFoundError: unknown model, and a base address ending in /chat/completions", async () => {
    const err = await errorOf(client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    const misconfigured = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1/chat/completions", maxRetries: 0 });
    const e2 = await errorOf(misconfigured.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
    expect(e2).toBeInstanceOf(OpenAI.NotFoundError);
    expect(e2.message).toContain("must end at /v1");
  });

  test("402 insufficient_credits is an APIError with status 402 and nothing is held", async () => {
    const a = await h.account("0.000001", "poor");
    const before = ledgerState(h, a.id);
    const c = new OpenAI({ apiKey: a.key, baseURL: h.base + "/v1", maxRetries: 0 });
    const err = await errorOf(c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(402);
    expect(err.code).toBe("insufficient_credits");
    expect(err.type).toBe("insufficient_quota");
    expect(ledgerState(h, a.id)).toEqual(before);
  });

  test("503 model_not_installed → InternalServerError, without Retry-After, told not to retry (speech, embeddings without files)", async () => {
    const speech = await errorOf(client.audio.speech.create({ model: "voice-82m", voice: "alloy", input: "hi" }));
    expect(speech).toBeInstanceOf(OpenAI.InternalServerError);
    expect(speech.status).toBe(503);
    expect(speech.code).toBe("model_not_installed");
    expect(speech.type).toBe("api_error");
    expect(speech.message).toContain("switchyard models pull voice-82m");
    expect(speech.headers.get("retry-after")).toBeNull();
    expect(speech.headers.get("x-should-retry")).toBe("false");
    const emb = await errorOf(client.embeddings.create({ model: "embedding-300m", input: "hi" }));
    expect(emb).toBeInstanceOf(OpenAI.InternalServerError);
    expect(emb.status).toBe(503);
  });

  test("502 upstream_error → InternalServerError", async () => {
    fake.behave({ failStatus: 500 });
    try {
      const err = await errorOf(client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }));
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(err.status).toBe(502);
      expect(err.code).toBe("upstream_error");
    } finally {
      fake.behave({});
    }
  });
});

describe("body size limit", () => {
  let small: Harness;
  let key: string;
  let id: string;
  beforeAll(async () => {
    small = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MAX_BODY_BYTES: "2048" });
    const a = await small.account(1);
    key = a.key;
    id = a.id;
  });
  afterAll(() => small.stop());

  const big = () => ({ model: MODEL, messages: [{ role: "user", content: "x".repeat(4096) }] });

  test("a body over the limit → 413 request_too_large, ledger unchanged", async () => {
    const before = ledgerState(small, id);
    const res = await raw({ key, body: big() }, small);
    expectError(res, 413, "request_too_large", null);
    expect(res.body.error.message).toContain("2048");
    expect(ledgerState(small, id)).toEqual(before);
  });

  test("a body far over the limit (1 MB) gets the same 413 shape, not a bare one", async () => {
    const res = await raw({ key, body: { model: MODEL, messages: [{ role: "user", content: "x".repeat(1 << 20) }] } }, small);
    expectError(res, 413, "request_too_large", null);
  });

  test("a chunked body (no content-length) over the limit → 413 too", async () => {
    const bytes = new TextEncoder().encode(JSON.stringify(big()));
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytes.slice(0, 1000));
        c.enqueue(bytes.slice(1000));
        c.close();
      },
    });
    const res = await fetch(small.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("request_too_large");
  });

  test("the SDK sees a 413 as an APIError with that status", async () => {
    const c = new OpenAI({ apiKey: key, baseURL: small.base + "/v1", maxRetries: 0 });
    const err = await errorOf(c.chat.completions.create(big() as never));
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(413);
  });

  test("a body under the limit still works", async () => {
    const res = await raw({ key, body: { model: MODEL, messages: [{ role: "user", content: "x".repeat(100) }] } }, small);
    expect(res.status).toBe(200);
  });
});

describe("x-request-id on every response", () => {
  test.each([
    ["GET", "/"],
    ["GET", "/v1"],
    ["GET", "/v1/models"],
    ["GET", "/v1/models/glm-4.6"],
    ["GET", "/nope"],
  ])("%s %s", async (method, path) => {
    const res = await fetch(h.base + path, { method });
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  test("request ids are unique", async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, () => fetch(h.base + "/v1/models").then((r) => r.headers.get("x-request-id"))));
    expect(new Set(ids).size).toBe(20);
  });
});
