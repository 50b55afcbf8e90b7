/**
 * 200 concurrent requests from one account whose balance covers exactly 37 of them (docs/money.md).
 * Each request's hold equals its charge (the fake upstream reports exactly the reserved tokens),
 * so whatever the interleaving exactly 37 succeed, 163 get 402, the balance ends at zero without
 * ever going below it, and the ledger's entries add up to the balance to the unit. On both stores.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled, storeState } from "./support/ledger-state";
import { chat, messages, setLimits } from "./support/gateway-client";
import { describeEachStore } from "./support/stores";
import { promptTokenBound } from "../src/tokens/tokens";

const MODEL = "glm-4.6";
const WORDS = ["a", "b", "c", "d", "e", "f"];
const TOTAL = 200;
const COVERED = 37;

describeEachStore("money under load", (store) => {
  let fake: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    // The reported prompt tokens equal the hold's input bound, and output equals max_tokens.
    fake = startFakeUpstream({ words: WORDS, promptTokens: promptTokenBound(messages), delayMs: 20 });
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  test(`${TOTAL} concurrent requests, balance for ${COVERED}: exactly ${COVERED} succeed, the rest 402, ledger exact`, async () => {
    const perRequest = expectedChatCost(MODEL, promptTokenBound(messages), WORDS.length);
    const a = await h.account(unitsToUsd(perRequest * COVERED));
    // Raise this account's limits so that only money decides.
    await setLimits(h, a.id, { rate_limit_rpm: 100_000, concurrency_limit: 1_000 });
    const start = await storeState(h, a.id);
    expect(start.balance).toBe(perRequest * COVERED);

    let minAvailable = Infinity;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const { balance, reserved } = await h.probe.balance(a.id);
        minAvailable = Math.min(minAvailable, balance - reserved, balance);
        await Bun.sleep(1);
      }
    })();

    const results = await Promise.all(
      Array.from({ length: TOTAL }, async (_, i) => {
        const stream = i % 2 === 1;
        const res = await chat(h, a.key, { model: MODEL, max_tokens: WORDS.length, stream, stream_options: stream ? { include_usage: true } : undefined });
        const id = res.headers.get("x-request-id")!;
        if (res.status !== 200) return { status: res.status, id, body: await res.json() };
        if (!stream) return { status: 200, id, cost: ((await res.json()) as any).usage.cost, header: res.headers.get("x-request-cost") };
        const text = await res.text();
        const usageLine = text.split("\n").filter((l) => l.includes('"usage"')).pop()!;
        return { status: 200, id, cost: JSON.parse(usageLine.slice(6)).usage.cost, done: text.includes("data: [DONE]") };
      }),
    );
    watching = false;
    await watcher;

    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length).toBe(COVERED);
    expect(refused.length).toBe(TOTAL - COVERED);
    for (const r of refused) expect((r as any).body.error.code).toBe("insufficient_credits");
    for (const r of ok) {
      expect(r.cost).toBe(Number(unitsToUsd(perRequest)));
      if ("header" in r) expect(r.header).toBe(unitsToUsd(perRequest));
      if ("done" in r) expect(r.done).toBe(true);
    }
    expect(minAvailable).toBeGreaterThanOrEqual(0);

    const end = await settled(h, a.id);
    expect(end).toMatchObject({ balance: 0, reserved: 0, pendingHolds: 0, charges: COVERED, sum: 0 });
    // One charge per successful request id, of exactly its cost; none for the refused ones.
    const charges = await h.probe.charges(a.id);
    expect(new Set(charges.map((c) => c.request_id))).toEqual(new Set(ok.map((r) => r.id)));
    for (const c of charges) expect(c.amount).toBe(-perRequest);
    // Every refused request's hold never existed; every admitted one is posted.
    expect(await h.probe.holdStates(a.id)).toEqual({ posted: COVERED });
  }, 60_000);
});
