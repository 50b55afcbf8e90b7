/**
 * Concurrency and money (docs/money.md): 50 parallel requests against a balance that covers exactly
 * 10 holds. Holds are taken atomically, so exactly 10 are admitted, 40 get 402, the available
 * balance never dips below zero, and the ledger's entries add up to the balance change exactly.
 * On both stores.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled, storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { promptTokenBound } from "../src/tokens/tokens";

const MODEL = "glm-4.6";
const MAX_TOKENS = 1000;
const WORDS = ["a", "b", "c", "d", "e", "f"];
const PROMPT_TOKENS = 11;
const messages = [{ role: "user", content: "Count to six." }];

describeEachStore("money across parallel requests", (store) => {
  let fake: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    fake = startFakeUpstream({ words: WORDS, promptTokens: PROMPT_TOKENS });
    // Limits high enough that only money decides who is admitted.
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_CONCURRENCY_LIMIT: "1000", SWITCHYARD_RATE_LIMIT_RPM: "100000" }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  /** The hold one request takes: its prompt's upper bound plus max_tokens, at catalog prices. */
  function holdUnits(): number {
    return expectedChatCost(MODEL, promptTokenBound(messages), MAX_TOKENS);
  }

  function post(key: string, stream: boolean): Promise<Response> {
    return fetch(h.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: MAX_TOKENS, stream }),
    });
  }

  test("50 parallel requests, balance for 10: exactly 10 served, 40 refused with 402, never below zero", async () => {
    const hold = holdUnits();
    const a = await h.account(unitsToUsd(hold * 10), "ten-holds");
    const start = await storeState(h, a.id);
    expect(start.balance).toBe(hold * 10);

    // Every request must still be waiting on the upstream when the last one asks for its hold.
    fake.behave({ words: WORDS, promptTokens: PROMPT_TOKENS, delayMs: 600 });
    let minAvailable = Infinity;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const s = await h.probe.balance(a.id);
        minAvailable = Math.min(minAvailable, s.balance - s.reserved, s.balance);
        await Bun.sleep(2);
      }
    })();

    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => post(a.key, i % 2 === 1)));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    sampling = false;
    await sampler;

    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.map((r, i) => ({ status: r.status, body: bodies[i]! })).filter((r) => r.status === 402);
    expect(responses.map((r) => r.status).filter((s) => s !== 200 && s !== 402)).toEqual([]);
    expect(ok.length).toBe(10);
    expect(refused.length).toBe(40);
    for (const r of refused) expect(JSON.parse(r.body).error.code).toBe("insufficient_credits");
    expect(minAvailable).toBeGreaterThanOrEqual(0);

    const end = await settled(h, a.id);
    expect(end.pendingHolds).toBe(0);
    expect(end.reserved).toBe(0);
    expect(end.charges).toBe(10);
    // Each served request was charged its exact cost; the ledger adds up to the balance change.
    const perRequest = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(start.balance - end.balance).toBe(10 * perRequest);
    expect(end.sum - start.sum).toBe(end.balance - start.balance);
    expect(end.sum).toBe(end.balance);
    expect(end.balance).toBeGreaterThanOrEqual(0);
  });

  test("once the first wave settled, the freed balance admits new requests again", async () => {
    const hold = holdUnits();
    const a = await h.account(unitsToUsd(hold * 2), "two-holds");
    fake.behave({ words: WORDS, promptTokens: PROMPT_TOKENS, delayMs: 300 });
    const first = await Promise.all(Array.from({ length: 6 }, () => post(a.key, false)));
    await Promise.all(first.map((r) => r.text()));
    expect(first.filter((r) => r.status === 200).length).toBe(2);
    await settled(h, a.id);
    fake.behave({ words: WORDS, promptTokens: PROMPT_TOKENS });
    const again = await post(a.key, false);
    await again.text();
    // Two holds minus two small actual charges still leaves more than one hold free.
    expect(2 * hold - 2 * expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length)).toBeGreaterThanOrEqual(hold);
    expect(again.status).toBe(200);
    const end = await settled(h, a.id);
    expect(end.sum).toBe(end.balance);
  });

  test("usage above the hold is clamped to it: the prompt is billed as held, never beyond what the account holds", async () => {
    const hold = holdUnits();
    const a = await h.account(unitsToUsd(hold), "one-hold");
    // The upstream claims a prompt far larger than our bound said it could be.
    fake.behave({ words: WORDS, promptTokens: 5_000_000 });
    const res = await post(a.key, false);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost: number; prompt_tokens: number } };
    const end = await settled(h, a.id);
    // Each quantity is recorded at most as held: the prompt at its bound, the honest output as reported.
    const charged = expectedChatCost(MODEL, promptTokenBound(messages), WORDS.length);
    expect(charged).toBeLessThanOrEqual(hold);
    expect(body.usage.prompt_tokens).toBe(promptTokenBound(messages));
    expect(body.usage.cost).toBe(Number(unitsToUsd(charged)));
    expect(res.headers.get("x-request-cost")).toBe(unitsToUsd(charged));
    expect(end.balance).toBe(hold - charged);
    expect(end.sum).toBe(end.balance);
    expect(end.reserved).toBe(0);
    const again = await post(a.key, false);
    expect(again.status).toBe(402);
  });

  test("parallel requests across many accounts each add up exactly", async () => {
    fake.behave({ words: WORDS, promptTokens: PROMPT_TOKENS, delayMs: 20 });
    const accounts = await Promise.all(Array.from({ length: 5 }, (_, i) => h.account(1, `acct-${i}`)));
    const before = await Promise.all(accounts.map((a) => storeState(h, a.id)));
    const all = await Promise.all(accounts.flatMap((a) => Array.from({ length: 8 }, (_, i) => post(a.key, i % 2 === 0).then((r) => r.text().then(() => r.status)))));
    expect(all.every((s) => s === 200)).toBe(true);
    const perRequest = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    for (const [i, a] of accounts.entries()) {
      const end = await settled(h, a.id);
      expect(end.charges).toBe(8);
      expect(before[i]!.balance - end.balance).toBe(8 * perRequest);
      expect(end.sum).toBe(end.balance);
    }
  });
});
