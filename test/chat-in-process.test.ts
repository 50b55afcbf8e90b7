/**
 * The chat path's orchestration in process: requests handed to the app's own handler
 * (`app.handle(new Request(...))`, as Hono's `app.request()`), with no listening socket of the
 * gateway's, against a fake upstream on loopback. Auth, admission, the model's resolution, the
 * metered call (hold, dispatch, charge), the stream's relay and the request lifecycle all run as
 * in a server; what a test sees is the Response and the ledger.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { createServices, type Services } from "../src/services";
import { createApp } from "../src/http/app";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";

const ADMIN_TOKEN = "in-process-admin-token-0123456789";
const MODEL = "glm-4.6";
/** What the fake upstream answers by default: six words, an 11-token prompt. */
const WORDS = ["Hello", " from", " the", " fake", " upstream", "."];
const PROMPT_TOKENS = 11;
const messages = [{ role: "user", content: "Say hello." }];

let fake: FakeUpstream;
let dataDir: string;
let services: Services;
let app: ReturnType<typeof createApp>["app"];
let acct: { id: string; key: string };

/** A request to the app's own handler: the origin is never dialled. */
function call(method: string, path: string, init: { key?: string; body?: unknown } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return app.handle(new Request(`http://switchyard.test${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }));
}

async function newAccount(credits: string): Promise<{ id: string; key: string }> {
  const a = await call("POST", "/admin/accounts", { key: ADMIN_TOKEN, body: { name: "in-process", credits } });
  expect(a.status).toBe(201);
  const id = ((await a.json()) as { id: string }).id;
  const k = await call("POST", `/admin/accounts/${id}/keys`, { key: ADMIN_TOKEN, body: { name: "k" } });
  expect(k.status).toBe(201);
  return { id, key: ((await k.json()) as { key: string }).key };
}

/**
 * A streamed body read as Bun's server reads it: each chunk decoded before the next is asked for.
 * The stream frees a chunk's buffer once the next one is asked for (metering/producer-stream.ts,
 * runtime/memory.ts), so a reader that keeps chunks to join later (`res.text()`) finds them empty.
 */
async function readStreamed(res: Response): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of res.body!) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

async function balanceOf(accountId: string): Promise<number> {
  return (await services.usage.balance(accountId))!.balance;
}

/** The charge entry of a request, once the ledger has written it (a stream settles just after its last byte). */
async function chargeOf(accountId: string, requestId: string) {
  for (;;) {
    const entry = (await services.ledger.entries(accountId)).find((e) => e.request_id === requestId && e.kind === "charge");
    if (entry && services.ledger.held(accountId) === 0) return entry;
    await Bun.sleep(5);
  }
}

beforeAll(async () => {
  fake = startFakeUpstream();
  dataDir = mkdtempSync(join(tmpdir(), "switchyard-in-process-"));
  const config = loadConfig({
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    SWITCHYARD_LOG_LEVEL: "silent",
    SWITCHYARD_UPSTREAM_URL: fake.url,
    // Every route is served: the fake upstream's model list is never read.
    SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "0",
  });
  services = await createServices(config, { stopAfterStoreFailure: () => {} }, "serve");
  ({ app } = createApp(services));
  acct = await newAccount("10");
});

afterAll(async () => {
  await services?.close();
  fake?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  fake.behave({});
  fake.requests.length = 0;
});

describe("chat completions through the app's own handler", () => {
  test("a plain completion: the rewritten reply, its cost in x-request-cost, one charge of exactly that", async () => {
    const before = await balanceOf(acct.id);
    const res = await call("POST", "/v1/chat/completions", { key: acct.key, body: { model: MODEL, messages } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    const cost = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    const requestId = res.headers.get("x-request-id")!;
    expect(body.id).toBe("chatcmpl-" + requestId.replace(/^req_/, ""));
    expect(body.model).toBe(MODEL);
    expect(body.choices[0].message.content).toBe(WORDS.join(""));
    expect(body.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: WORDS.length, cost: Number(unitsToUsd(cost)) });
    expect(res.headers.get("x-request-cost")).toBe(unitsToUsd(cost));
    // The upstream got the client's request, for the public id, not streamed.
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!).toMatchObject({ model: MODEL, messages, stream: false });
    // The ledger: one charge of the cost, and the balance lower by exactly that.
    const charge = await chargeOf(acct.id, requestId);
    expect(charge).toMatchObject({ amount: -cost, endpoint: "/v1/chat/completions", model: MODEL, input_tokens: PROMPT_TOKENS, output_tokens: WORDS.length });
    expect(before - (await balanceOf(acct.id))).toBe(cost);
  });

  test("a streamed completion: SSE chunks of the words, a usage chunk with the cost, [DONE], then the charge", async () => {
    const before = await balanceOf(acct.id);
    const res = await call("POST", "/v1/chat/completions", { key: acct.key, body: { model: MODEL, messages, stream: true, stream_options: { include_usage: true } } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const requestId = res.headers.get("x-request-id")!;
    const text = await readStreamed(res);
    const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    expect(data[data.length - 1]).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
    expect(content).toBe(WORDS.join(""));
    for (const c of chunks) {
      expect(c.id).toBe("chatcmpl-" + requestId.replace(/^req_/, ""));
      expect(c.model).toBe(MODEL);
    }
    const cost = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    const usage = chunks[chunks.length - 1];
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: WORDS.length, cost: Number(unitsToUsd(cost)) });
    // The upstream was asked for a stream with usage, whatever the client asked.
    expect(fake.requests[0]!).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const charge = await chargeOf(acct.id, requestId);
    expect(charge.amount).toBe(-cost);
    expect(before - (await balanceOf(acct.id))).toBe(cost);
  });

  test("402 when the balance cannot cover the hold: no upstream call, no charge, nothing held", async () => {
    const poor = await newAccount("0.000001");
    const res = await call("POST", "/v1/chat/completions", { key: poor.key, body: { model: MODEL, messages } });
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("insufficient_credits");
    expect(fake.requests).toHaveLength(0);
    expect(services.ledger.held(poor.id)).toBe(0);
    expect(await balanceOf(poor.id)).toBe(1_000);
    expect((await services.ledger.entries(poor.id)).filter((e) => e.kind === "charge")).toEqual([]);
  });

  test("400 naming the field at fault, before any hold or upstream call", async () => {
    const before = await balanceOf(acct.id);
    const missing = await call("POST", "/v1/chat/completions", { key: acct.key, body: { model: MODEL } });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).error).toMatchObject({ code: "missing_required_parameter", param: "messages" });
    const wrong = await call("POST", "/v1/chat/completions", { key: acct.key, body: { model: MODEL, messages, max_tokens: "10" } });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as any).error).toMatchObject({ code: "invalid_value", param: "max_tokens" });
    expect(fake.requests).toHaveLength(0);
    expect(services.ledger.held(acct.id)).toBe(0);
    expect(await balanceOf(acct.id)).toBe(before);
  });

  test("401 without a key, answered by the same handler", async () => {
    const res = await call("POST", "/v1/chat/completions", { body: { model: MODEL, messages } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("missing_api_key");
  });
});
