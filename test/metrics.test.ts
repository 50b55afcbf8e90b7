/**
 * GET /metrics (Prometheus text) and the per-request JSON log line: what an operator sees after
 * some traffic. Labels are bounded (route patterns, catalog ids) and carry no secrets.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost } from "./support/expected-cost";
import { chat, setLimits } from "./support/gateway-client";
import { openEngineClocks } from "../src/metrics/engine-time";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
const logLines: string[] = [];
const realWrite = process.stderr.write.bind(process.stderr);

beforeAll(async () => {
  fake = startFakeUpstream({ words: ["a", "b"], promptTokens: 5 });
  (process.stderr as any).write = (chunk: unknown, ...rest: unknown[]) => {
    // Lines written in the same turn of the event loop arrive together, one per line.
    if (typeof chunk === "string") for (const line of chunk.split("\n")) if (line.startsWith("{")) logLines.push(line);
    return realWrite(chunk as string, ...(rest as []));
  };
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_LOG_LEVEL: "info" });
  acct = await h.account(5);
});
afterAll(async () => {
  (process.stderr as any).write = realWrite;
  await h.stop();
  fake.stop();
});

const metricValue = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

test("metrics cover requests, latency, overhead, tokens, credits, holds, rejections and upstream errors", async () => {
  for (let i = 0; i < 3; i++) expect((await chat(h, acct.key)).status).toBe(200);
  expect(await (await chat(h, acct.key, { stream: true })).text()).toContain("[DONE]");
  expect((await chat(h, acct.key, { model: "no-such-model" })).status).toBe(404);
  fake.behave({ failStatus: 500 });
  expect((await chat(h, acct.key)).status).toBe(502);
  fake.behave({ words: ["a", "b", "c"], errorAfterChunks: 1 });
  await (await chat(h, acct.key, { stream: true })).text();
  fake.behave({ words: ["a", "b"], promptTokens: 5 });
  await setLimits(h, acct.id, { rate_limit_rpm: 1 });
  expect((await chat(h, acct.key)).status).toBe(429);
  await setLimits(h, acct.id, { rate_limit_rpm: null });

  const res = await fetch(h.base + "/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  const text = await res.text();
  const ep = 'endpoint="/v1/chat/completions"';
  expect(metricValue(text, `switchyard_requests_total{${ep},model="glm-4.6",status="200"}`)).toBe(5);
  expect(metricValue(text, `switchyard_requests_total{${ep},model="unknown",status="404"}`)).toBe(1);
  expect(metricValue(text, `switchyard_requests_total{${ep},model="glm-4.6",status="502"}`)).toBe(1);
  // Refused before its body was read (limits come first): its model is not known.
  expect(metricValue(text, `switchyard_requests_total{${ep},model="none",status="429"}`)).toBe(1);
  expect(metricValue(text, `switchyard_request_duration_seconds_count{${ep}}`)).toBe(8);
  expect(metricValue(text, `switchyard_gateway_overhead_seconds_count{${ep}}`)).toBe(8);
  // Overhead excludes upstream time, so it is below total latency.
  const overhead = metricValue(text, `switchyard_gateway_overhead_seconds_sum{${ep}}`)!;
  const total = metricValue(text, `switchyard_request_duration_seconds_sum{${ep}}`)!;
  expect(overhead).toBeGreaterThan(0);
  expect(overhead).toBeLessThan(total);
  expect(metricValue(text, `switchyard_tokens_total{direction="input",${ep},model="glm-4.6"}`)).toBe(20);
  expect(metricValue(text, `switchyard_tokens_total{direction="output",${ep},model="glm-4.6"}`)).toBe(8);
  expect(metricValue(text, `switchyard_credits_charged_nano_usd_total{${ep},model="glm-4.6"}`)).toBe(4 * expectedChatCost("glm-4.6", 5, 2));
  expect(metricValue(text, "switchyard_holds_open")).toBe(0);
  expect(metricValue(text, "switchyard_requests_in_flight")).toBe(0);
  expect(metricValue(text, `switchyard_limit_rejections_total{limit="rate"}`)).toBe(1);
  expect(metricValue(text, `switchyard_upstream_errors_total{${ep},kind="upstream_error"}`)).toBe(1);
  expect(metricValue(text, `switchyard_upstream_errors_total{${ep},kind="mid_stream"}`)).toBe(1);
  expect(text).toContain("# TYPE switchyard_request_duration_seconds histogram");
  expect(text).not.toContain(acct.id);
  expect(text).not.toContain("127.0.0.1");
});

test("prompt tokens read from the upstream's cache are counted by endpoint and model", async () => {
  fake.behave({ promptTokens: 11, cachedTokens: 8 });
  try {
    for (let i = 0; i < 2; i++) expect((await chat(h, acct.key, { model: "kimi-k2-instruct" })).status).toBe(200);
  } finally {
    fake.behave({});
  }
  const text = await (await fetch(h.base + "/metrics")).text();
  expect(metricValue(text, `switchyard_prompt_cache_tokens_total{endpoint="/v1/chat/completions",kind="read",model="kimi-k2-instruct"}`)).toBe(16);
  expect(metricValue(text, `switchyard_tokens_total{direction="input",endpoint="/v1/chat/completions",model="kimi-k2-instruct"}`)).toBe(22);
  expect(text).toContain("# TYPE switchyard_prompt_cache_tokens_total counter");
});

test("one JSON log line per request, with its request id and no secrets", async () => {
  const res = await chat(h, acct.key);
  const id = res.headers.get("x-request-id")!;
  await res.json();
  await Bun.sleep(20);
  const line = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.request_id === id);
  expect(line).toMatchObject({ level: "info", method: "POST", endpoint: "/v1/chat/completions", status: 200, outcome: "sent", account_id: acct.id, model: "glm-4.6" });
  expect(typeof line.duration_ms).toBe("number");
  expect(line.overhead_ms).toBeLessThanOrEqual(line.duration_ms);
  expect(line.cost_usd).toBe(res.headers.get("x-request-cost"));
  const all = logLines.join("\n");
  expect(all).not.toContain(acct.key);
  expect(all).not.toContain(fake.url);
});

test("every request ends once, whatever way it ends: one log line with its status, nothing left open", async () => {
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(h.base + path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${acct.key}`, ...headers }, body });
  const chatBody = JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
  const cases: [string, () => Promise<Response>, number][] = [
    ["plain", () => post("/v1/chat/completions", chatBody), 200],
    ["streamed", () => post("/v1/chat/completions", JSON.stringify({ model: "glm-4.6", stream: true, messages: [{ role: "user", content: "hi" }] })), 200],
    ["unknown model", () => post("/v1/chat/completions", JSON.stringify({ model: "nope", messages: [{ role: "user", content: "hi" }] })), 404],
    ["no key", () => post("/v1/chat/completions", chatBody, { authorization: "" }), 401],
    ["invalid JSON", () => post("/v1/chat/completions", "{nope"), 400],
    ["no such route", () => fetch(h.base + "/v1/nothing"), 404],
    ["wrong method", () => fetch(h.base + "/v1/chat/completions"), 405],
    ["a page", () => fetch(h.base + "/healthz"), 200],
  ];
  const ids: [string, string, number][] = [];
  for (const [name, send, status] of cases) {
    const res = await send();
    await res.text();
    expect([name, res.status]).toEqual([name, status]);
    ids.push([name, res.headers.get("x-request-id")!, status]);
  }
  await Bun.sleep(20);
  const lines = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
  for (const [name, id, status] of ids) {
    const mine = lines.filter((l) => l.request_id === id);
    expect([name, mine.length, mine[0]?.status]).toEqual([name, 1, status]);
  }
  expect(openEngineClocks()).toBe(0);
  const text = await (await fetch(h.base + "/metrics")).text();
  expect(metricValue(text, "switchyard_requests_in_flight")).toBe(0);
});
