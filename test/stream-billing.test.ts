/**
 * Stream billing (docs/money.md) over real HTTP:
 *   upstream error mid-stream              → free, hold voided, error event;
 *   client disconnect after some chunks    → input + the output delivered before the disconnect;
 *   client disconnect before any output    → free;
 *   upstream omits usage                   → billed from our own count, reported in the usage chunk.
 * On both stores.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled, storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { chat, contentChunks, messages, readUntil } from "./support/gateway-client";
import { countTextTokens, promptTokenCount } from "../src/tokens/tokens";

const MODEL = "glm-4.6";
const WORDS = Array.from({ length: 40 }, (_, i) => ` word${i}`);

describeEachStore("stream billing", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let acct: { id: string; key: string };

  beforeAll(async () => ({ fake, h, acct } = await startFakeStack(10, store)), 60_000);
  afterAll(() => stopFakeStack(h, fake));
  beforeEach(() => fake.behave({}));

  const charges = () => h.probe.charges(acct.id);
  const holdState = async (requestId: string) => (await h.probe.hold(requestId))?.state;

  async function free(run: () => Promise<string>) {
    const before = await storeState(h, acct.id);
    const requestId = await run();
    const after = await settled(h, acct.id);
    expect(after).toMatchObject({ balance: before.balance, reserved: 0, pendingHolds: 0, charges: before.charges, sum: before.sum });
    expect(await holdState(requestId)).toBe("voided");
  }

  describe("an upstream failure mid-stream is free", () => {
    test("error event after some chunks", async () => {
      fake.behave({ words: WORDS, errorAfterChunks: 5 });
      await free(async () => {
        const res = await chat(h, acct.key, { model: MODEL, stream: true });
        const text = await res.text();
        expect(contentChunks(text).length).toBe(5);
        expect(text).toContain('"code":"upstream_error"');
        expect(text).not.toContain("[DONE]");
        return res.headers.get("x-request-id")!;
      });
    });

    test("connection dropped after some chunks", async () => {
      fake.behave({ words: WORDS, dropAfterChunks: 7 });
      await free(async () => {
        const res = await chat(h, acct.key, { model: MODEL, stream: true });
        expect(await res.text()).toContain("upstream_error");
        return res.headers.get("x-request-id")!;
      });
    });
  });

  describe("a client that goes away", () => {
    test("after some chunks pays input plus the delivered output", async () => {
      fake.behave({ words: WORDS, chunkDelayMs: 80 });
      const before = await storeState(h, acct.id);
      const ac = new AbortController();
      const res = await chat(h, acct.key, { model: MODEL, stream: true }, ac.signal);
      const id = res.headers.get("x-request-id")!;
      const { text } = await readUntil(res, (t) => contentChunks(t).length >= 3);
      ac.abort();
      const after = await settled(h, acct.id);
      expect(after.pendingHolds).toBe(0);
      const c = (await charges()).find((e) => e.request_id === id)!;
      expect(c).toBeDefined();
      const seen = contentChunks(text).length;
      // The server may have written the next chunk before it noticed the disconnect, never more.
      const candidates = [seen, seen + 1].map((k) => countTextTokens(WORDS.slice(0, k).join("")));
      expect(candidates).toContain(c.output_tokens);
      expect(c.input_tokens).toBe(promptTokenCount(messages));
      expect(-c.amount).toBe(expectedChatCost(MODEL, c.input_tokens, c.output_tokens));
      expect(before.balance - after.balance).toBe(-c.amount);
      expect(after.sum - before.sum).toBe(c.amount);
      expect(await holdState(id)).toBe("posted");
      // Far less than the whole reply: the upstream was stopped too.
      expect(c.output_tokens).toBeLessThan(countTextTokens(WORDS.join("")));
    });

    test("before the first chunk, while the upstream has not answered, pays nothing", async () => {
      fake.behave({ words: WORDS, delayMs: 400 });
      const ac = new AbortController();
      const before = await storeState(h, acct.id);
      const pending = chat(h, acct.key, { model: MODEL, stream: true }, ac.signal).catch(() => null);
      // Wait until the hold exists, so the request really was in flight.
      for (let i = 0; i < 100 && (await storeState(h, acct.id)).pendingHolds === 0; i++) await Bun.sleep(5);
      expect((await storeState(h, acct.id)).pendingHolds).toBe(1);
      ac.abort();
      await pending;
      const after = await settled(h, acct.id);
      expect(after).toMatchObject({ balance: before.balance, reserved: 0, pendingHolds: 0, charges: before.charges });
    });

    test("after the headers but before any content pays nothing", async () => {
      fake.behave({ words: WORDS, chunkDelayMs: 300 });
      await free(async () => {
        const ac = new AbortController();
        const res = await chat(h, acct.key, { model: MODEL, stream: true }, ac.signal);
        expect(res.status).toBe(200);
        // The role chunk (empty content) may arrive; no content does within 300 ms.
        await Bun.sleep(50);
        ac.abort();
        return res.headers.get("x-request-id")!;
      });
    });
  });

  describe("an upstream that omits usage is still billed correctly", () => {
    test("stream: our own count of input and delivered output, reported in the final usage chunk", async () => {
      const words = ["The", " quick", " brown", " fox", " jumps", "."];
      fake.behave({ words, omitUsage: true });
      const before = await storeState(h, acct.id);
      const res = await chat(h, acct.key, { model: MODEL, stream: true, stream_options: { include_usage: true } });
      const text = await res.text();
      const usage = JSON.parse(text.split("\n").filter((l) => l.includes('"usage"')).pop()!.slice(6)).usage;
      const input = promptTokenCount(messages);
      const output = countTextTokens(words.join(""));
      const cost = expectedChatCost(MODEL, input, output);
      expect(usage).toMatchObject({ prompt_tokens: input, completion_tokens: output, total_tokens: input + output, cost: Number(unitsToUsd(cost)) });
      const after = await settled(h, acct.id);
      expect(before.balance - after.balance).toBe(cost);
      expect(after.sum - before.sum).toBe(-cost);
    });

    test("plain: same rule, with usage.cost and x-request-cost", async () => {
      const words = ["Hello", " there"];
      fake.behave({ words, omitUsage: true });
      const before = await storeState(h, acct.id);
      const res = await chat(h, acct.key, { model: MODEL });
      const body = (await res.json()) as any;
      const cost = expectedChatCost(MODEL, promptTokenCount(messages), countTextTokens(words.join("")));
      expect(body.usage.cost).toBe(Number(unitsToUsd(cost)));
      expect(res.headers.get("x-request-cost")).toBe(unitsToUsd(cost));
      expect(before.balance - (await settled(h, acct.id)).balance).toBe(cost);
    });

    test("with usage: the upstream's counts are billed, and the stream's usage chunk reports the charge", async () => {
      fake.behave({ words: ["a", "b", "c"], promptTokens: 17 });
      const before = await storeState(h, acct.id);
      const res = await chat(h, acct.key, { model: MODEL, stream: true, stream_options: { include_usage: true } });
      const text = await res.text();
      const usage = JSON.parse(text.split("\n").filter((l) => l.includes('"usage"')).pop()!.slice(6)).usage;
      const cost = expectedChatCost(MODEL, 17, 3);
      expect(usage.cost).toBe(Number(unitsToUsd(cost)));
      expect(before.balance - (await settled(h, acct.id)).balance).toBe(cost);
    });
  });
});
