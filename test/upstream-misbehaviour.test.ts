/**
 * An upstream that answers 200 with objects of the wrong shape, absurd usage, or many choices must
 * never cost the client money it should not pay, leave a hold behind, or produce a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { startHarness, type Harness } from "./support/harness";

/** Raw replies, set per test: a JSON body for plain calls, SSE data lines for streams. */
let plainBody: unknown = null;
let streamLines: unknown[] = [];
let upstream: Server<undefined>;
let h: Harness;

beforeAll(async () => {
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean };
      if (!body.stream) return Response.json(plainBody);
      const text = streamLines.map((l) => `data: ${typeof l === "string" ? l : JSON.stringify(l)}\n\n`).join("");
      return new Response(text, { headers: { "content-type": "text/event-stream" } });
    },
  });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: `http://127.0.0.1:${upstream.port}/v1` });
});
afterAll(async () => {
  await h.stop();
  upstream.stop(true);
});

const chunk = (delta: unknown, extra: Record<string, unknown> = {}) => ({ id: "x", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: null }], ...extra });

async function call(path: string, body: Record<string, unknown>, key: string) {
  const res = await fetch(h.base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

const requests = {
  chat: ["/v1/chat/completions", { model: "glm-4.6", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }],
  messages: ["/v1/messages", { model: "glm-4.6", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }],
  responses: ["/v1/responses", { model: "glm-4.6", max_output_tokens: 100, input: "hi" }],
} as const;

describe("plain replies of the wrong shape: 502, nothing charged, no hold left", () => {
  const shapes = [
    { choices: [null] },
    { choices: [{ index: 0, message: { role: "assistant", content: "x", tool_calls: [null] }, finish_reason: "stop" }] },
    { choices: [{ index: 0, message: { role: "assistant", content: "x", tool_calls: {} }, finish_reason: "stop" }] },
    { choices: [{ index: 0, message: "text", finish_reason: "stop" }] },
  ];
  for (const [name, [path, body]] of Object.entries(requests)) {
    test.each(shapes)(`${name}: %j`, async (shape) => {
      plainBody = { id: "x", object: "chat.completion", created: 1, model: "m", usage: { prompt_tokens: 5, completion_tokens: 5 }, ...shape };
      const a = await h.account(1);
      const r = await call(path, body, a.key);
      expect(r.status).toBe(502);
      expect(h.balanceUnits(a.id)).toEqual({ balance: 1_000_000_000, reserved: 0 });
      expect(h.ledgerSum(a.id)).toBe(1_000_000_000);
    });
  }
});

describe("streams that break in the middle: an error frame, nothing charged, no hold left", () => {
  const breaks: [string, unknown[]][] = [
    ["tool_calls [null]", [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ tool_calls: [null] }), "[DONE]"]],
    ["tool_calls {}", [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ tool_calls: {} }), "[DONE]"]],
  ];
  for (const [name, [path, body]] of Object.entries(requests)) {
    test.each(breaks)(`${name}: %s`, async (_label, lines) => {
      streamLines = lines;
      const a = await h.account(1);
      const r = await call(path, { ...body, stream: true }, a.key);
      expect(r.status).toBe(200);
      expect(r.text).toMatch(/error|failed/);
      expect(h.balanceUnits(a.id)).toEqual({ balance: 1_000_000_000, reserved: 0 });
    });
  }
});

test("absurd upstream usage is capped at what the account can pay; the stream still ends properly", async () => {
  streamLines = [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Hello" }),
    { ...chunk({}), choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { id: "x", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 100_000_000_000_000, completion_tokens: 1 } },
    "[DONE]",
  ];
  const a = await h.account(1);
  const r = await call("/v1/chat/completions", { ...requests.chat[1], stream: true }, a.key);
  expect(r.status).toBe(200);
  expect(r.text.trim().endsWith("data: [DONE]")).toBe(true);
  const after = h.balanceUnits(a.id);
  expect(after.reserved).toBe(0);
  expect(after.balance).toBeGreaterThanOrEqual(0);
  expect(h.ledgerSum(a.id)).toBe(after.balance);
});

test("the hold covers every requested choice: n multiplies the output reserve", async () => {
  plainBody = { id: "x", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 5 } };
  // glm-4.6 output is $2.20/M: 100 tokens x 50 choices = 0.011 USD of output alone.
  const a = await h.account("0.001");
  const r = await call("/v1/chat/completions", { ...requests.chat[1], n: 50 }, a.key);
  expect(r.status).toBe(402);
  const ok = await call("/v1/chat/completions", { ...requests.chat[1], n: 1 }, a.key);
  expect(ok.status).toBe(200);
  const tooMany = await call("/v1/chat/completions", { ...requests.chat[1], n: 129 }, a.key);
  expect(tooMany.status).toBe(400);
  expect(JSON.parse(tooMany.text).error.param).toBe("n");
});
