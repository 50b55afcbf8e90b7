/**
 * The circuit breaker over real HTTP: a route that keeps failing is skipped (no request reaches
 * it) for the cool-down, then one probe goes through; its success brings the route back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { settled } from "./support/ledger-state";

const MODEL = "qwen3-next-80b-a3b";
const COOLDOWN_MS = 400;

let flaky: ScriptedUpstream;
let backup: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  flaky = startScripted(() => ({ status: 500, json: { error: { message: "boom" } } }));
  backup = startScripted((b) => okJson(b, "backup"));
  h = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { flaky: { base_url: flaky.url }, backup: { base_url: backup.url } },
      models: { [MODEL]: [{ upstream: "flaky", weight: 1 }, { upstream: "backup", weight: 0 }] },
      circuit_breaker: { failures: 2, cooldown_ms: COOLDOWN_MS },
    }),
  });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  flaky.stop();
  backup.stop();
});

async function ask(): Promise<string> {
  const res = await postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
  expect(res.status).toBe(200);
  return (await res.json()).choices[0].message.content;
}

test("opens after 2 consecutive failures, skips the route while open, probes after the cool-down, closes on success", async () => {
  // Closed: each request tries flaky first, then fails over.
  expect(await ask()).toBe("backup");
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(2);

  // Open: flaky receives nothing.
  for (let i = 0; i < 3; i++) expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(2);

  // Half-open after the cool-down: the next request probes flaky; it fails → open again.
  await Bun.sleep(COOLDOWN_MS + 50);
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(3);
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(3);

  // Recovered: the next probe succeeds and the route is closed again.
  flaky.script((b) => okJson(b, "flaky is back"));
  await Bun.sleep(COOLDOWN_MS + 50);
  expect(await ask()).toBe("flaky is back");
  expect(await ask()).toBe("flaky is back");
  expect(flaky.requests.length).toBe(5);

  // Every one of those requests was charged exactly once.
  const st = await settled(h, acct.id);
  expect(st.charges).toBe(9);
  expect(st.reserved).toBe(0);
});

test("when every route is open the model answers 503 model_unavailable without contacting anyone", async () => {
  flaky.script(() => ({ status: 500, json: {} }));
  backup.script(() => ({ status: 500, json: {} }));
  for (let i = 0; i < 2; i++) {
    const res = await postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(502);
  }
  const seen = flaky.requests.length + backup.requests.length;
  const res = await postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
  expect(res.status).toBe(503);
  expect((await res.json()).error.code).toBe("model_unavailable");
  expect(res.headers.get("retry-after")).not.toBeNull();
  expect(flaky.requests.length + backup.requests.length).toBe(seen);
  // Still listed: the model is live, only its routes are resting.
  const models = await (await fetch(h.base + "/v1/models")).json();
  expect(models.data.map((m: { id: string }) => m.id)).toContain(MODEL);
});
