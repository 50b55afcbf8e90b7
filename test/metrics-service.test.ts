/**
 * GET /metrics for the operator (docs/operate.md "Limits, usage and metrics"): behind
 * SWITCHYARD_METRICS_TOKEN when it is set (open otherwise), with build info, the standard process
 * metrics, time to first token of streamed chat by model, and each chat route's breaker state —
 * labelled by the route's position, never the upstream's name or address.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okStream, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { VERSION } from "../src/version";
import { loadConfig, ConfigError } from "../src/config";

const MODEL = "qwen3-next-80b-a3b";
const TOKEN = "metrics-token-0123456789abcdef";

let flaky: ScriptedUpstream;
let good: ScriptedUpstream;
let h: Harness;
let accounts: { id: string; key: string }[];

beforeAll(async () => {
  flaky = startScripted(() => ({ status: 500, json: { error: { message: "boom" } } }));
  good = startScripted((b) => okStream(b, ["Hel", "lo"]));
  h = await startHarness({
    SWITCHYARD_METRICS_TOKEN: TOKEN,
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { "flaky-upstream": { base_url: flaky.url }, "good-upstream": { base_url: good.url } },
      models: { [MODEL]: [{ upstream: "flaky-upstream", weight: 1 }, { upstream: "good-upstream", weight: 0 }] },
      // A cool-down far longer than the test: an opened breaker stays open.
      circuit_breaker: { failures: 2, cooldown_ms: 3_600_000 },
    }),
  });
  accounts = [await h.account(10), await h.account(10)];
});
afterAll(async () => {
  await h.stop();
  flaky.stop();
  good.stop();
});

const scrape = async (headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) => {
  const res = await fetch(h.base + "/metrics", { headers });
  return { status: res.status, text: await res.text() };
};
const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("SWITCHYARD_METRICS_TOKEN", () => {
  test("without the token: 401; a wrong one: 401; the right one (Bearer, any case): 200", async () => {
    const none = await scrape({});
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text).error.message).toContain("SWITCHYARD_METRICS_TOKEN");
    expect((await scrape({ authorization: "Bearer wrong-token-0123456789" })).status).toBe(401);
    expect((await scrape({ authorization: TOKEN })).status).toBe(401);
    const ok = await scrape({ authorization: `bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain("# TYPE switchyard_requests_total counter");
  });

  test("an API key does not open it, nor the token in the URL", async () => {
    expect((await scrape({ authorization: `Bearer ${accounts[0]!.key}` })).status).toBe(401);
    const res = await fetch(h.base + `/metrics?access_token=${TOKEN}`);
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain(TOKEN);
  });

  test("a short token is refused at start-up, naming the variable", () => {
    expect(() => loadConfig({ SWITCHYARD_METRICS_TOKEN: "short" })).toThrow(ConfigError);
    expect(() => loadConfig({ SWITCHYARD_METRICS_TOKEN: "short" })).toThrow(/SWITCHYARD_METRICS_TOKEN/);
  });

  test("unset: open, as Prometheus expects by default", async () => {
    const open = await startHarness();
    try {
      expect((await fetch(open.base + "/metrics")).status).toBe(200);
    } finally {
      await open.stop();
    }
  });
});

test("build info and the standard process metrics", async () => {
  const { text } = await scrape();
  const info = text.split("\n").find((l) => l.startsWith("switchyard_build_info{"));
  expect(info).toBeDefined();
  expect(info).toContain(`version="${VERSION}"`);
  expect(info).toContain(`bun="${Bun.version}"`);
  expect(info).toMatch(/onnxruntime="\d+\.\d+\.\d+"/);
  expect(info).toMatch(/commit="[^"]+"/);
  expect(info!.endsWith(" 1")).toBe(true);
  expect(text).toContain("# TYPE process_cpu_seconds_total counter");
  expect(value(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
  expect(value(text, "process_cpu_seconds_total")).toBeGreaterThan(0);
  const start = value(text, "process_start_time_seconds")!;
  expect(start).toBeGreaterThan(1_600_000_000);
  expect(start).toBeLessThanOrEqual(Date.now() / 1000);
  if (process.platform === "linux") expect(value(text, "process_open_fds")).toBeGreaterThan(2);
});

test("time to first token of streamed chat, by model; breaker states by model and route position, never the upstream", async () => {
  const before = await scrape();
  expect(value(before.text, `switchyard_upstream_breaker_state{model="${MODEL}",route="${MODEL}#0"}`)).toBe(0);
  expect(value(before.text, `switchyard_upstream_breaker_state{model="${MODEL}",route="${MODEL}#1"}`)).toBe(0);

  // Two accounts' failures on route #0 open it (the requests fail over to #1 and stream).
  for (const a of accounts) {
    const res = await postChat(h.base, a.key, { model: MODEL, stream: true, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("[DONE]");
  }
  const { text } = await scrape();
  expect(value(text, `switchyard_upstream_breaker_state{model="${MODEL}",route="${MODEL}#0"}`)).toBe(2);
  expect(value(text, `switchyard_upstream_breaker_state{model="${MODEL}",route="${MODEL}#1"}`)).toBe(0);
  expect(text).not.toContain("flaky-upstream");
  expect(text).not.toContain("good-upstream");
  expect(text).not.toContain(new URL(flaky.url).host);
  expect(text).not.toContain(new URL(good.url).host);

  expect(text).toContain("# TYPE switchyard_time_to_first_token_seconds histogram");
  expect(value(text, `switchyard_time_to_first_token_seconds_count{model="${MODEL}"}`)).toBe(2);
  expect(value(text, `switchyard_time_to_first_token_seconds_bucket{model="${MODEL}",le="+Inf"}`)).toBe(2);
  expect(value(text, `switchyard_time_to_first_token_seconds_sum{model="${MODEL}"}`)).toBeGreaterThan(0);
});

test("streamed Messages and Responses record time to first token too", async () => {
  const count = async () => value((await scrape()).text, `switchyard_time_to_first_token_seconds_count{model="${MODEL}"}`) ?? 0;
  const before = await count();
  const key = accounts[0]!.key;
  const messages = await fetch(h.base + "/v1/messages", {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, max_tokens: 16, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(messages.status).toBe(200);
  expect(await messages.text()).toContain("message_stop");
  const responses = await fetch(h.base + "/v1/responses", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, stream: true, input: "hi" }),
  });
  expect(responses.status).toBe(200);
  expect(await responses.text()).toContain("response.completed");
  expect(await count()).toBe(before + 2);
});

test("a non-streamed chat records no time to first token", async () => {
  const before = value((await scrape()).text, `switchyard_time_to_first_token_seconds_count{model="${MODEL}"}`) ?? 0;
  good.script((b) => ({ status: 200, json: { id: "x", object: "chat.completion", created: 1, model: b.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1 } } }));
  const res = await postChat(h.base, accounts[0]!.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  expect(value((await scrape()).text, `switchyard_time_to_first_token_seconds_count{model="${MODEL}"}`) ?? 0).toBe(before);
});
