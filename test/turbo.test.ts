/**
 * Turbo over routes: `model-turbo` or service_tier "priority"/"fast" on a turbo-capable model goes
 * to its priority routes when it has some, else to its standard routes with the priority hint
 * (vLLM `priority`, lower = sooner); billed exactly 1.5x; the response echoes the tier served. A
 * client's own `priority` never reaches an upstream. A model without turbo is standard in all.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, okStream, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat, sseEvents } from "./support/chat-client";
import { ledgerState, settled } from "./support/ledger-state";
import { expectedChatCost } from "./support/expected-cost";
import { DEFAULT_PRIORITY_HINT } from "../src/upstream/routes-config";

const WITH_PRIO_ROUTE = "glm-4.6"; // turbo-capable, has a priority route
const HINT_ONLY = "kimi-k2-instruct"; // turbo-capable, standard routes only
const NO_HINT = "minimax-m2"; // turbo-capable, upstream configured without a hint
const NO_TURBO = "qwen3-next-80b-a3b"; // not turbo-capable

let std: ScriptedUpstream;
let fast: ScriptedUpstream;
let plain: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  std = startScripted((b) => (b.stream ? okStream(b) : okJson(b, "standard")));
  fast = startScripted((b) => (b.stream ? okStream(b) : okJson(b, "fast lane")));
  plain = startScripted((b) => okJson(b, "plain"));
  h = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { std: { base_url: std.url }, fast: { base_url: fast.url }, plain: { base_url: plain.url, priority_hint: null } },
      models: {
        [WITH_PRIO_ROUTE]: [{ upstream: "std", model: "glm" }, { upstream: "fast", model: "glm-fast", priority: true }],
        [HINT_ONLY]: [{ upstream: "std", model: "kimi" }],
        [NO_HINT]: [{ upstream: "plain", model: "m2" }],
        [NO_TURBO]: [{ upstream: "std", model: "qn" }],
      },
    }),
  });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  std.stop();
  fast.stop();
  plain.stop();
});
beforeEach(() => {
  std.requests.length = 0;
  fast.requests.length = 0;
  plain.requests.length = 0;
});

async function costOf(body: Record<string, unknown>): Promise<{ units: number; res: any }> {
  const before = ledgerState(h, acct.id);
  const res = await postChat(h.base, acct.key, { messages: [{ role: "user", content: "hi" }], ...body });
  expect(res.status).toBe(200);
  const json = body.stream ? await sseEvents(res) : await res.json();
  const after = await settled(h, acct.id);
  expect(after.charges - before.charges).toBe(1);
  return { units: before.balance - after.balance, res: json };
}

describe("a model with a priority route", () => {
  test.each([
    [{ model: `${WITH_PRIO_ROUTE}-turbo` }],
    [{ model: WITH_PRIO_ROUTE, service_tier: "priority" }],
    [{ model: WITH_PRIO_ROUTE, service_tier: "fast" }],
  ])("%j → the priority route, 1.5x, service_tier priority", async (req) => {
    const { units, res } = await costOf(req);
    expect(res.choices[0].message.content).toBe("fast lane");
    expect(res.service_tier).toBe("priority");
    expect(res.model).toBe(req.model);
    expect(fast.requests.length).toBe(1);
    expect(fast.requests[0]!.model).toBe("glm-fast");
    expect(fast.requests[0]!.priority).toBeUndefined(); // a priority route needs no hint
    expect(fast.requests[0]!.service_tier).toBeUndefined();
    expect(std.requests.length).toBe(0);
    expect(units).toBe(expectedChatCost(WITH_PRIO_ROUTE, 10, 2, true));
  });

  test("a standard request never takes the priority route, and costs 1x", async () => {
    const { units, res } = await costOf({ model: WITH_PRIO_ROUTE });
    expect(res.choices[0].message.content).toBe("standard");
    expect(res.service_tier).toBe("default");
    expect(fast.requests.length).toBe(0);
    expect(units).toBe(expectedChatCost(WITH_PRIO_ROUTE, 10, 2));
  });

  test("streamed turbo: priority route, 1.5x, every chunk says priority", async () => {
    const { units, res } = await costOf({ model: `${WITH_PRIO_ROUTE}-turbo`, stream: true, stream_options: { include_usage: true } });
    const chunks = res.filter((e: unknown) => typeof e === "object");
    expect(chunks.every((c: any) => c.service_tier === "priority")).toBe(true);
    expect(fast.requests.length).toBe(1);
    const usage = chunks.at(-1).usage;
    expect(units).toBe(expectedChatCost(WITH_PRIO_ROUTE, usage.prompt_tokens, usage.completion_tokens, true));
  });
});

describe("a turbo model with standard routes only", () => {
  test("turbo forwards the priority hint and bills 1.5x", async () => {
    const { units, res } = await costOf({ model: `${HINT_ONLY}-turbo` });
    expect(res.service_tier).toBe("priority");
    expect(std.requests[0]!.priority).toBe(DEFAULT_PRIORITY_HINT);
    expect(DEFAULT_PRIORITY_HINT).toBeLessThan(0);
    expect(units).toBe(expectedChatCost(HINT_ONLY, 10, 2, true));
  });

  test("a standard request carries no hint; a client's own priority is dropped", async () => {
    const { units, res } = await costOf({ model: HINT_ONLY, priority: -1000 });
    expect(res.service_tier).toBe("default");
    expect("priority" in std.requests[0]!).toBe(false);
    expect(units).toBe(expectedChatCost(HINT_ONLY, 10, 2));
  });

  test("an upstream configured with priority_hint null receives no hint, but turbo is still served and billed 1.5x", async () => {
    const { units, res } = await costOf({ model: `${NO_HINT}-turbo` });
    expect(res.service_tier).toBe("priority");
    expect("priority" in plain.requests[0]!).toBe(false);
    expect(units).toBe(expectedChatCost(NO_HINT, 10, 2, true));
  });
});

describe("a model without turbo", () => {
  test.each(["priority", "fast"])("service_tier %s is served at the standard tier and price, without a hint", async (tier) => {
    const { units, res } = await costOf({ model: NO_TURBO, service_tier: tier });
    expect(res.service_tier).toBe("default");
    expect("priority" in std.requests[0]!).toBe(false);
    expect(units).toBe(expectedChatCost(NO_TURBO, 10, 2));
  });

  test("its -turbo id does not exist", async () => {
    const res = await postChat(h.base, acct.key, { model: `${NO_TURBO}-turbo`, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(404);
  });
});
