/**
 * A hold is a ceiling. Upstreams that over-report usage, ignore max_tokens or never stop once
 * made a request with max_tokens 16 cost thousands of times its hold, or the whole balance. Now:
 *   - reported usage beyond the hold is clamped to it (charged = hold), logged and counted;
 *   - a stream is relayed only up to the output cap, then the upstream is stopped and the stream
 *     ends as `length` (Messages: max_tokens; Responses: incomplete / max_output_tokens);
 *   - a charge never spends another request's hold.
 * On both stores.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";
import { chat, contentChunks, post } from "./support/gateway-client";
import { settled, storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { unitsToUsd } from "./support/expected-cost";
import { relayCap } from "../src/tokens/output-cap";
import { countTextTokens } from "../src/tokens/tokens";

describeEachStore("a hold is a ceiling", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let acct: { id: string; key: string };

  beforeAll(async () => ({ fake, h } = await startFakeStack(10, store)), 60_000);
  afterAll(() => stopFakeStack(h, fake));
  // A fresh account per test: what one test's charges do cannot decide the next one's outcome.
  beforeEach(async () => {
    fake.behave({});
    acct = await h.account(10);
  });

  const holdOf = async (requestId: string) => (await h.probe.hold(requestId))!;
  /** The charge with its amount as a positive number. */
  const chargeOf = async (requestId: string) => {
    const c = await h.probe.charge(requestId);
    return c ? { ...c, amount: -c.amount } : null;
  };

  async function clampCount(endpoint: string): Promise<number> {
    const text = await (await fetch(h.base + "/metrics")).text();
    const line = text.split("\n").find((l) => l.startsWith("switchyard_charge_clamps_total{") && l.includes(`endpoint="${endpoint}"`) && l.includes('model="glm-4.6"'));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
  }

  /** The data events of an SSE text, parsed. */
  const events = (sse: string) =>
    sse.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => JSON.parse(l.slice(6)));

  describe("usage reported beyond the hold is clamped to it", () => {
    test("plain: 200,000 prompt + 32,768 completion tokens for max_tokens 16 is charged exactly the hold, logged as clamped and counted", async () => {
      fake.behave({ reportUsage: { prompt: 200_000, completion: 32_768 } });
      const clampsBefore = await clampCount("/v1/chat/completions");
      const res = await chat(h, acct.key, { max_tokens: 16 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      const id = res.headers.get("x-request-id")!;
      const hold = await holdOf(id);
      const charge = (await chargeOf(id))!;
      expect(charge.amount).toBe(hold.amount);
      // The note, then the prices the hold was computed with (docs/operate.md, "Managing models, prices and routes live").
      expect(charge.reason).toStartWith("clamped to hold; price per 1M USD: ");
      expect(charge.output_tokens).toBe(16);
      expect(res.headers.get("x-request-cost")).toBe(unitsToUsd(hold.amount));
      expect(body.usage).toMatchObject({ completion_tokens: 16, prompt_tokens: charge.input_tokens, cost: Number(unitsToUsd(hold.amount)) });
      expect(await clampCount("/v1/chat/completions")).toBe(clampsBefore + 1);
    });

    test("plain: 1,000,000 completion tokens takes the hold, not the account's balance", async () => {
      fake.behave({ reportUsage: { prompt: 11, completion: 1_000_000 } });
      const a = await h.account(1);
      const res = await chat(h, a.key, { max_tokens: 16 });
      expect(res.status).toBe(200);
      const id = res.headers.get("x-request-id")!;
      const after = await settled(h, a.id);
      expect(1_000_000_000 - after.balance).toBe((await holdOf(id)).amount);
      expect(after.balance).toBeGreaterThan(900_000_000);
    });

    test("streamed: absurd usage at the end is clamped too, and the stream still ends properly", async () => {
      fake.behave({ reportUsage: { prompt: 5_000_000, completion: 9_000_000 } });
      const res = await chat(h, acct.key, { max_tokens: 16, stream: true, stream_options: { include_usage: true } });
      const text = await res.text();
      expect(text.trim().endsWith("data: [DONE]")).toBe(true);
      const id = res.headers.get("x-request-id")!;
      await settled(h, acct.id);
      const held = (await holdOf(id)).amount;
      expect((await chargeOf(id))!.amount).toBe(held);
      expect(events(text).pop().usage.cost).toBe(Number(unitsToUsd(held)));
    });

    test("two over-reporting requests on a balance that covers exactly both holds: each pays its own hold, nobody else's", async () => {
      fake.behave({ reportUsage: { prompt: 10_000_000, completion: 10_000_000 }, delayMs: 30 });
      // Size the account to exactly two holds of this request.
      const probe = await chat(h, acct.key, { max_tokens: 16 });
      const hold = (await holdOf(probe.headers.get("x-request-id")!)).amount;
      await probe.text();
      const a = await h.account(unitsToUsd(2 * hold));
      const [r1, r2] = await Promise.all([chat(h, a.key, { max_tokens: 16 }), chat(h, a.key, { max_tokens: 16 })]);
      expect([r1.status, r2.status]).toEqual([200, 200]);
      const after = await settled(h, a.id);
      expect(after).toMatchObject({ balance: 0, reserved: 0, pendingHolds: 0, charges: 2 });
      for (const r of [r1, r2]) expect((await chargeOf(r.headers.get("x-request-id")!))!.amount).toBe(hold);
    });
  });

  describe("a stream is relayed only up to its output cap", () => {
    const cap = relayCap(16);

    test("an upstream that ignores max_tokens is cut at the cap and the stream ends as `length`, billed within the hold", async () => {
      // 5,000 words, still being produced when the gateway stops reading.
      const words = Array.from({ length: 5000 }, () => " lorem");
      fake.behave({ words, chunkDelayMs: 1 });
      const abortedBefore = fake.aborted;
      const before = await storeState(h, acct.id);
      const res = await chat(h, acct.key, { max_tokens: 16, stream: true, stream_options: { include_usage: true } });
      const text = await res.text();
      const id = res.headers.get("x-request-id")!;
      const delivered = contentChunks(text).join("");
      expect(countTextTokens(delivered)).toBeLessThanOrEqual(cap);
      expect(countTextTokens(delivered)).toBeGreaterThan(16);
      const last = events(text).filter((e) => e.choices?.length > 0).pop();
      expect(last.choices).toEqual([{ index: 0, delta: {}, finish_reason: "length" }]);
      expect(text.trim().endsWith("data: [DONE]")).toBe(true);
      const after = await settled(h, acct.id);
      expect(after.pendingHolds).toBe(0);
      const charge = (await chargeOf(id))!;
      expect(charge.amount).toBeLessThanOrEqual((await holdOf(id)).amount);
      expect(charge.output_tokens).toBe(16);
      expect(before.balance - after.balance).toBe(charge.amount);
      // The gateway stopped reading: the upstream saw its stream cancelled.
      for (let i = 0; i < 100 && fake.aborted === abortedBefore; i++) await Bun.sleep(10);
      expect(fake.aborted).toBeGreaterThan(abortedBefore);
    });

    test("an upstream that never ends is cut at the cap too", async () => {
      fake.behave({ endless: true, words: [" la"] });
      const res = await chat(h, acct.key, { max_tokens: 16, stream: true });
      const text = await res.text();
      const id = res.headers.get("x-request-id")!;
      expect(countTextTokens(contentChunks(text).join(""))).toBeLessThanOrEqual(cap);
      expect(events(text).filter((e) => e.choices?.length > 0).pop().choices[0].finish_reason).toBe("length");
      await settled(h, acct.id);
      expect((await chargeOf(id))!.amount).toBeLessThanOrEqual((await holdOf(id)).amount);
    }, 15_000);

    test("Messages: the cut ends with stop_reason max_tokens", async () => {
      fake.behave({ endless: true, words: [" la"] });
      const res = await post(h, "/v1/messages", acct.key, { model: "glm-4.6", max_tokens: 16, stream: true, messages: [{ role: "user", content: "hi" }] });
      const text = await res.text();
      const delta = events(text).find((e) => e.type === "message_delta");
      expect(delta.delta.stop_reason).toBe("max_tokens");
      expect(text).toContain("message_stop");
      await settled(h, acct.id);
    }, 15_000);

    test("Responses: the cut ends as incomplete, reason max_output_tokens", async () => {
      fake.behave({ endless: true, words: [" la"] });
      const res = await post(h, "/v1/responses", acct.key, { model: "glm-4.6", max_output_tokens: 16, stream: true, input: "hi" });
      const text = await res.text();
      const done = events(text).find((e) => e.type === "response.incomplete");
      expect(done.response.status).toBe("incomplete");
      expect(done.response.incomplete_details).toEqual({ reason: "max_output_tokens" });
      await settled(h, acct.id);
    }, 15_000);

    test("an honest upstream that stops at max_tokens is never cut", async () => {
      const words = Array.from({ length: 16 }, () => " word");
      fake.behave({ words });
      const res = await chat(h, acct.key, { max_tokens: 16, stream: true });
      const text = await res.text();
      expect(contentChunks(text)).toHaveLength(16);
      expect(events(text).filter((e) => e.choices?.length > 0).pop().choices[0].finish_reason).toBe("stop");
    });
  });
});
