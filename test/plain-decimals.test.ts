/**
 * Money in JSON is a plain decimal number everywhere (docs/money.md): a cost of 8e-8 USD is
 * written 0.00000008, never in exponent form — in chat, Messages and Responses bodies and their
 * final stream events, a stored response read back, /v1/usage, /v1/key, /v1/credits,
 * /v1/generation, the admin account and ledger JSON and the dashboard API.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { dashboardSession } from "./support/dashboard-session";
import catalog from "../src/catalog/catalog.json" with { type: "json" };

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
/** An account holding less than a millionth of a dollar. */
let tiny: { id: string; key: string };

beforeAll(async () => {
  fake = startFakeUpstream({ words: ["a", "b"], promptTokens: 5 });
  // glm-4.6 at 0.01 USD per million tokens: a request of a few tokens costs a few 1e-8 USD.
  const glm = catalog.models.find((m) => m.id === "glm-4.6")!;
  const cheap = { ...glm, pricing: { input_per_million: "0.01", output_per_million: "0.01" } };
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_CATALOG: JSON.stringify({ models: [cheap] }) });
  acct = await h.account(10);
  tiny = await h.account("0.00000005");
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

/** A JSON number in exponent form (after a colon, bracket or comma, so ids in strings never match). */
const EXPONENT = /[:\[,]\s*-?\d+(?:\.\d+)?[eE][-+]?\d+/;

function plain(text: string, where: string): void {
  expect({ where, exponent: EXPONENT.exec(text)?.[0] ?? null }).toEqual({ where, exponent: null });
}

const costOf = (text: string) => /"cost":\s*(0\.0000000\d+)/.exec(text)?.[1];

async function send(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(h.base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return { text: await res.text(), headers: res.headers };
}

const messages = [{ role: "user", content: "hi" }];

test("chat: the body's and the final stream chunk's usage.cost", async () => {
  const body = await send("/v1/chat/completions", { model: "glm-4.6", messages });
  plain(body.text, "chat body");
  expect(costOf(body.text)).toBe(body.headers.get("x-request-cost")!);
  const stream = await send("/v1/chat/completions", { model: "glm-4.6", messages, stream: true, stream_options: { include_usage: true } });
  plain(stream.text, "chat stream");
  expect(costOf(stream.text)).toMatch(/^0\.0000000\d+$/);
});

test("Messages: the body and the message_delta event", async () => {
  const anthropic = { "anthropic-version": "2023-06-01" };
  const body = await send("/v1/messages", { model: "glm-4.6", max_tokens: 16, messages }, anthropic);
  plain(body.text, "messages body");
  expect(costOf(body.text)).toMatch(/^0\.0000000\d+$/);
  const stream = await send("/v1/messages", { model: "glm-4.6", max_tokens: 16, messages, stream: true }, anthropic);
  plain(stream.text, "messages stream");
  expect(costOf(stream.text)).toMatch(/^0\.0000000\d+$/);
});

test("Responses: the body, response.completed, and the stored response read back", async () => {
  const body = await send("/v1/responses", { model: "glm-4.6", input: "hi" });
  plain(body.text, "responses body");
  const cost = costOf(body.text);
  expect(cost).toMatch(/^0\.0000000\d+$/);
  const stream = await send("/v1/responses", { model: "glm-4.6", input: "hi", stream: true });
  plain(stream.text, "responses stream");
  expect(costOf(stream.text)).toMatch(/^0\.0000000\d+$/);
  const id = JSON.parse(body.text).id as string;
  const stored = await (await fetch(`${h.base}/v1/responses/${id}`, { headers: { authorization: `Bearer ${acct.key}` } })).text();
  plain(stored, "stored response");
  expect(costOf(stored)).toBe(cost!);
});

test("usage, key, credits and generation records", async () => {
  const chat = await send("/v1/chat/completions", { model: "glm-4.6", messages });
  const requestId = chat.headers.get("x-request-id")!;
  for (const path of ["/v1/usage?group_by=day,model", "/v1/key", "/v1/credits", `/v1/generation?id=${requestId}`]) {
    const res = await fetch(h.base + path, { headers: { authorization: `Bearer ${acct.key}` } });
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    plain(await res.text(), path);
  }
  for (const path of ["/v1/key", "/v1/credits"]) {
    const text = await (await fetch(h.base + path, { headers: { authorization: `Bearer ${tiny.key}` } })).text();
    plain(text, `${path} of a tiny balance`);
    expect(text).toContain("0.00000005");
  }
});

test("admin account and ledger JSON, and the dashboard API", async () => {
  for (const path of [`/admin/accounts/${tiny.id}`, "/admin/accounts", `/admin/accounts/${tiny.id}/ledger`, `/admin/accounts/${acct.id}/ledger`]) {
    const res = await fetch(h.base + path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    plain(await res.text(), path);
  }
  const tinyAccount = await (await fetch(`${h.base}/admin/accounts/${tiny.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  expect(tinyAccount).toContain('"balance":0.00000005');
  const session = await dashboardSession(h, "account", acct.key);
  const dash = await session.call("GET", "/account");
  expect(dash.status).toBe(200);
  plain(await dash.text(), "dashboard account API");
  const tinySession = await dashboardSession(h, "account", tiny.key);
  const tinyDash = await (await tinySession.call("GET", "/account")).text();
  plain(tinyDash, "dashboard account API, tiny balance");
  expect(tinyDash).toContain("0.00000005");
});
