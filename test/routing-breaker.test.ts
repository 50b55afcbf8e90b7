/**
 * The circuit breaker over real HTTP: a route that keeps failing for several accounts is skipped
 * (no request reaches it) for the cool-down, then one probe goes through; its success brings the
 * route back. One account whose requests the upstream answers with 500 (for their content) never
 * opens it: the others stay served (issue 10, failure 5).
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
let acct2: { id: string; key: string };

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
  acct2 = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  flaky.stop();
  backup.stop();
});

/** Two accounts take turns: failures from several accounts are what opens a breaker. */
let turn = 0;
async function ask(): Promise<string> {
  const res = await postChat(h.base, (turn++ % 2 === 0 ? acct : acct2).key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
  expect(res.status).toBe(200);
  return (await res.json()).choices[0].message.content;
}

test("opens after 2 consecutive failures (of two accounts), skips the route while open, probes after the cool-down, closes on success", async () => {
  // Closed: each request tries flaky first, then fails over.
  expect(await ask()).toBe("backup");
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(2);

  // Open: flaky receives nothing.
  for (let i = 0; i < 3; i++) expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(2);

  // Half-open after the cool-down: the next request probes flaky; its 500 for one account alone
  // could be that request's content, so the next request probes too; a second account's 500
  // opens it again.
  await Bun.sleep(COOLDOWN_MS + 50);
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(3);
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(4);
  expect(await ask()).toBe("backup");
  expect(flaky.requests.length).toBe(4);

  // Recovered: the next probe succeeds and the route is closed again.
  flaky.script((b) => okJson(b, "flaky is back"));
  await Bun.sleep(COOLDOWN_MS + 50);
  expect(await ask()).toBe("flaky is back");
  expect(await ask()).toBe("flaky is back");
  expect(flaky.requests.length).toBe(6);

  // Every one of those requests was charged exactly once.
  const [st, st2] = [await settled(h, acct.id), await settled(h, acct2.id)];
  expect(st.charges + st2.charges).toBe(10);
  expect(st.reserved + st2.reserved).toBe(0);
});

test("when every route is open the model answers 503 model_unavailable without contacting anyone", async () => {
  flaky.script(() => ({ status: 500, json: {} }));
  backup.script(() => ({ status: 500, json: {} }));
  for (const a of [acct, acct2]) {
    const res = await postChat(h.base, a.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
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

test("one account's poisoned requests (500 for their content) never open the breaker: the others stay served", async () => {
  const POISON = "please crash the engine";
  const engine = startScripted((b) => (JSON.stringify(b.messages).includes(POISON) ? { status: 500, json: { error: { message: "engine crashed" } } } : okJson(b, "served")));
  const hp = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { only: { base_url: engine.url } },
      models: { [MODEL]: [{ upstream: "only" }] },
      // Before, five such requests opened it and every account got 503 for 30 s.
      circuit_breaker: { failures: 5, cooldown_ms: 30_000 },
    }),
  });
  try {
    const [attacker, victim, other] = [await hp.account(10), await hp.account(10), await hp.account(10)];
    const chat = (key: string, content: string) => postChat(hp.base, key, { model: MODEL, messages: [{ role: "user", content }] });
    for (let i = 0; i < 12; i++) {
      const res = await chat(attacker.key, POISON);
      expect(res.status).toBe(502);
    }
    // The victim is served by the same (only) route, at once, and so is the attacker's next
    // harmless request.
    const served = await chat(victim.key, "hi");
    expect(served.status).toBe(200);
    expect((await served.json()).choices[0].message.content).toBe("served");
    expect((await chat(attacker.key, "hi")).status).toBe(200);
    // The poisoned requests were free; the served ones charged once each.
    expect((await settled(hp, attacker.id)).charges).toBe(1);
    expect((await settled(hp, victim.id)).charges).toBe(1);

    // When the upstream fails for several accounts, it is the route, and the breaker opens.
    for (const a of [attacker, victim, other, attacker, victim]) expect((await chat(a.key, POISON)).status).toBe(502);
    const seen = engine.requests.length;
    const refused = await chat(other.key, "hi");
    expect(refused.status).toBe(503);
    expect(engine.requests.length).toBe(seen);
  } finally {
    await hp.stop();
    engine.stop();
  }
});
