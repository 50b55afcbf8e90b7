/**
 * Limits of the model, checked locally before anything is held or sent: the output ceiling
 * (32,768) on max_tokens / max_completion_tokens, and the context window, estimated with the
 * o200k tokenizer (src/tokens/tokens.ts) → 400 context_length_exceeded.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { ledgerState, settled } from "./support/ledger-state";

const MODEL = "minimax-m2"; // context window 196,608
const WINDOW = 196_608;

let up: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  up = startScripted((b) => okJson(b));
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url });
  acct = await h.account(100);
});
afterAll(async () => {
  await h.stop();
  up.stop();
});
beforeEach(() => {
  up.requests.length = 0;
});

async function rejected(body: Record<string, unknown>): Promise<any> {
  const before = ledgerState(h, acct.id);
  const res = await postChat(h.base, acct.key, { model: MODEL, ...body });
  expect(res.status).toBe(400);
  const json = await res.json();
  expect(up.requests.length).toBe(0);
  const after = await settled(h, acct.id);
  expect(after.balance).toBe(before.balance);
  expect(after.entries).toBe(before.entries);
  return json.error;
}

// " hello" is one o200k token; the text is about 200,000 tokens.
const HUGE = "hello" + " hello".repeat(200_000);
const BIG = " hello".repeat(180_000); // fits alone, not with 32,768 more output tokens

describe("output ceiling", () => {
  test.each([
    ["max_tokens", 32_769],
    ["max_completion_tokens", 32_769],
    ["max_tokens", 1_000_000],
  ] as [string, number][])("%s = %i → 400 naming the field", async (field, value) => {
    for (const stream of [false, true]) {
      const err = await rejected({ [field]: value, stream, messages: [{ role: "user", content: "hi" }] });
      expect(err.param).toBe(field);
      expect(err.message).toContain("32768");
    }
  });

  test.each([
    ["max_tokens", 0],
    ["max_tokens", 1.5],
    ["max_completion_tokens", "12"],
  ] as [string, unknown][])("%s = %p → 400 naming the field", async (field, value) => {
    const err = await rejected({ [field]: value, messages: [{ role: "user", content: "hi" }] });
    expect(err.param).toBe(field);
  });

  test("exactly 32,768 is accepted", async () => {
    const res = await postChat(h.base, acct.key, { model: MODEL, max_tokens: 32_768, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(up.requests[0]!.max_tokens).toBe(32_768);
  });
});

describe("context window", () => {
  test("input longer than the window → 400 context_length_exceeded", async () => {
    const err = await rejected({ messages: [{ role: "user", content: HUGE }] });
    expect(err.code).toBe("context_length_exceeded");
    expect(err.param).toBe("messages");
    expect(err.message).toContain(String(WINDOW));
  });

  test("input that fits alone but not with the requested output → 400 naming max_tokens", async () => {
    const err = await rejected({ max_tokens: 32_768, messages: [{ role: "user", content: BIG }] });
    expect(err.code).toBe("context_length_exceeded");
    expect(err.message).toContain("max_tokens");
  });

  test("the same input with a small max_tokens is served", async () => {
    const res = await postChat(h.base, acct.key, { model: MODEL, max_tokens: 100, messages: [{ role: "user", content: BIG }] });
    expect(res.status).toBe(200);
    expect(up.requests.length).toBe(1);
  });

  test("the same text on a 1M-window model is served", async () => {
    const res = await postChat(h.base, acct.key, { model: "minimax-m1", messages: [{ role: "user", content: HUGE }] });
    expect(res.status).toBe(200);
  });
});
