/**
 * Model aliases and the Anthropic model-list shape over real HTTP, with the official SDKs: an
 * alias is served and billed as its target and never listed; GET /v1/models answers in
 * Anthropic's shape when the request carries anthropic-version; a server tool is left out of
 * the upstream request and named in x-switchyard-ignored-tools.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startHarness, type Harness } from "../support/harness";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream";
import { billingChecks } from "../support/billing-checks";
import { expectedChatCost } from "../support/expected-cost";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MODEL_ALIASES: JSON.stringify({ "claude-haiku-*": "minimax-m2", "claude-*": "glm-4.6" }) });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

const { charged } = billingChecks(() => ({ h, accountId: acct.id, upstream: fake }));

test("an aliased claude-* id is served, reported and billed as its target", async () => {
  const client = new Anthropic({ apiKey: acct.key, baseURL: h.base, maxRetries: 0 });
  let msg!: Anthropic.Message;
  const units = await charged(async () => {
    msg = await client.messages.create({ model: "claude-haiku-4-5-20251001", max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
  });
  expect(msg.model).toBe("minimax-m2");
  expect(fake.requests.at(-1)!.model).toBe("minimax-m2");
  expect(units).toBe(expectedChatCost("minimax-m2", 11, 6));
  const row = h.db.query("SELECT model FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id DESC LIMIT 1").get(acct.id) as { model: string };
  expect(row.model).toBe("minimax-m2");
});

test("an aliased request is counted in the metrics under its target, not as an unknown model", async () => {
  const text = await (await fetch(h.base + "/metrics")).text();
  const series = (model: string) => `switchyard_requests_total{endpoint="/v1/messages",model="${model}",status="200"}`;
  expect(text).toContain(series("minimax-m2"));
  expect(text).not.toContain(series("unknown"));
});

test("aliases work on every chat protocol and are never listed", async () => {
  const openai = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 0 });
  const r = await openai.chat.completions.create({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] });
  expect(r.model).toBe("glm-4.6");
  const ids = (await openai.models.list()).data.map((m) => m.id);
  expect(ids).toContain("glm-4.6");
  expect(ids.some((id) => id.startsWith("claude"))).toBe(false);
  const missing = await fetch(h.base + "/v1/models/claude-sonnet-4-5");
  expect(missing.status).toBe(404);
});

test("GET /v1/models with anthropic-version answers in Anthropic's shape (the SDK pages through it)", async () => {
  const client = new Anthropic({ apiKey: acct.key, baseURL: h.base, maxRetries: 0 });
  const models: Anthropic.ModelInfo[] = [];
  for await (const m of client.models.list({ limit: 3 })) models.push(m);
  expect(models.length).toBeGreaterThan(3);
  for (const m of models) {
    expect(m.type).toBe("model");
    expect(typeof m.display_name).toBe("string");
    expect(new Date(m.created_at).toISOString()).toStartWith(m.created_at.slice(0, 19));
  }
  expect(new Set(models.map((m) => m.id)).size).toBe(models.length);
  expect(models.map((m) => m.id)).toContain("glm-4.6-turbo");
  expect(models.map((m) => m.id)).not.toContain("embedding-300m");
  const one = await client.models.retrieve("glm-4.6");
  expect(one).toMatchObject({ type: "model", id: "glm-4.6", display_name: "glm-4.6" });
});

test("a server tool is left out of the upstream request and named in x-switchyard-ignored-tools", async () => {
  const res = await fetch(h.base + "/v1/messages", {
    method: "POST",
    headers: { "x-api-key": acct.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({
      model: "glm-4.6", max_tokens: 64, messages: [{ role: "user", content: "search" }],
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 2 }, { name: "lookup", input_schema: { type: "object" } }],
    }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("x-switchyard-ignored-tools")).toBe("web_search");
  expect(fake.requests.at(-1)!.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["lookup"]);
});
