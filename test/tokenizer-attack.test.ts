/**
 * Issues 10 and 20: one account's text that is costly to tokenize must not hold other accounts'
 * requests. Account A floods count_tokens with random base64 (about twenty times slower to count
 * per character than prose); account B's 40 KB count, streamed Messages request and chat (its
 * upstream sends no usage, so the gateway counts) are answered while A's backlog is still queued.
 * Order and queue contents are asserted, never durations: the latency under attack is measured by
 * test/bench/token-attack.bench.ts. Also: count_tokens is limited per account by bytes in flight,
 * the token queue per account by characters (429s naming the limit), and hostile bodies on every
 * endpoint get an answer, never a 5xx.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { SseParser } from "../src/protocols/sse";
import { promptTokenBound, promptTokenCount } from "../src/tokens/tokens";

const MODEL = "glm-4.6";
/** count_tokens: bytes of text one account may have in flight; the token queue: characters per account. */
const COUNT_BYTES = 8_000_000;
const QUEUE_CHARS = 8_000_000;

let fake: FakeUpstream;
let h: Harness;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  // The upstream sends no usage: every answer is billed from Switchyard's own count.
  fake = startFakeUpstream({ omitUsage: true });
  h = await startHarness({
    SWITCHYARD_UPSTREAM_URL: fake.url,
    SWITCHYARD_COUNT_TOKENS_BYTES: String(COUNT_BYTES),
    SWITCHYARD_TOKEN_QUEUE_CHARS: String(QUEUE_CHARS),
  });
  a = await h.account(100, "attacker");
  b = await h.account(100, "victim");
}, 60_000);

afterAll(async () => {
  await h?.stop();
  fake?.stop();
});

const base64 = (chars: number) => randomBytes(Math.ceil((chars * 3) / 4)).toString("base64").slice(0, chars);
const SYSTEM_40K = "You are a careful assistant. Follow the house style guide in every answer. ".repeat(540);
const queued = (id: string) => h.server.services.tokens.queuedChars(id);

function post(key: string, path: string, body: unknown, signal?: AbortSignal) {
  return fetch(h.base + path, {
    method: "POST",
    headers: { "x-api-key": key, authorization: `Bearer ${key}`, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

/** Waits until A's earlier requests are over: nothing queued for counting, no count_tokens bytes in flight. */
async function idle(id: string) {
  for (let i = 0; i < 6_000 && (queued(id) > 0 || h.server.services.countTokensBytes.inUse(id) > 0); i++) await Bun.sleep(5);
  expect(queued(id)).toBe(0);
  expect(h.server.services.countTokensBytes.inUse(id)).toBe(0);
}

/** Waits until the account has `chars` queued for counting (its requests have all arrived). */
async function untilQueued(id: string, chars: number) {
  for (let i = 0; i < 2_000 && queued(id) < chars; i++) await Bun.sleep(5);
  expect(queued(id)).toBeGreaterThanOrEqual(chars);
}

/** A floods count_tokens with `n` random base64 texts of `chars`; `answered` counts its answers. */
function flood(n: number, chars: number) {
  const stop = new AbortController();
  const state = { answered: 0 };
  const done = Array.from({ length: n }, () =>
    post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: base64(chars) }] }, stop.signal).then(
      async (res) => {
        await res.arrayBuffer();
        state.answered++;
      },
      () => {},
    ),
  );
  return { state, stop: async () => (stop.abort(), await Promise.all(done)) };
}

test("another account's 40 KB count, streamed message and chat are answered while a count_tokens flood is still queued", async () => {
  // Warm: both token workers started.
  expect((await post(b.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: base64(30_000) }] })).status).toBe(200);

  // 32 (A's concurrency limit) texts of 200,000 characters, each handed to the worker whole.
  const N = 32;
  const attack = flood(N, 200_000);
  await untilQueued(a.id, N * 200_000);

  const system = SYSTEM_40K;
  const messages = [{ role: "user", content: "Summarise the guide." }];
  // 1. count_tokens: exact, and counted before A's backlog.
  const count = await post(b.key, "/v1/messages/count_tokens", { model: MODEL, system, messages });
  expect(count.status).toBe(200);
  expect(((await count.json()) as { input_tokens: number }).input_tokens).toBe(promptTokenCount([{ role: "system", content: system }, ...messages]));
  const afterCount = attack.state.answered;

  // 2. A streamed Messages request: message_start waits for no count (it announces the bound),
  //    the final message_delta carries the exact count.
  const res = await post(b.key, "/v1/messages", { model: MODEL, system, messages, max_tokens: 32, stream: true });
  expect(res.status).toBe(200);
  const events: { event: string | null; data: string }[] = [];
  const parser = new SseParser();
  for await (const chunk of res.body!) events.push(...parser.push(chunk));
  const start = JSON.parse(events.find((e) => e.event === "message_start")!.data);
  const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data);
  const chatMessages = [{ role: "system", content: system }, ...messages];
  expect(start.message.usage.input_tokens).toBe(promptTokenBound(chatMessages));
  expect(delta.usage.input_tokens).toBe(promptTokenCount(chatMessages));
  const afterStream = attack.state.answered;

  // 3. A 40 KB chat whose usage the gateway counts (the upstream sends none).
  const chat = await post(b.key, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: SYSTEM_40K }], max_tokens: 16 });
  expect(chat.status).toBe(200);
  expect(((await chat.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBe(promptTokenCount([{ role: "user", content: SYSTEM_40K }]));
  const afterChat = attack.state.answered;

  // First-come-first-served counted all of A's texts before B's (N answered first); now B's
  // counts take turns with A's, and each of B's requests is answered with A's backlog still queued.
  console.log(`A's count_tokens answered before B's count: ${afterCount}, before B's stream ended: ${afterStream}, before B's chat: ${afterChat} (of ${N})`);
  expect(afterCount).toBeLessThan(N);
  expect(afterStream).toBeLessThan(N);
  expect(afterChat).toBeLessThan(N);
  await attack.stop();
  await idle(a.id);
}, 180_000);

test("count_tokens is limited per account by bytes of text in flight: 429 naming the limit, other accounts unaffected", async () => {
  await idle(a.id);
  const attack = flood(1, 9_000_000); // alone, a body above the limit is admitted
  await untilQueued(a.id, 9_000_000);
  const refused = await post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] });
  expect(refused.status).toBe(429);
  const err = (await refused.json()) as { type: string; error: { type: string; message: string } };
  expect(err.error.type).toBe("rate_limit_error");
  expect(err.error.message).toContain(`limited to ${COUNT_BYTES} bytes of text in flight per account`);
  expect(refused.headers.get("retry-after")).toBe("1");
  // A large body refused before it was read: the connection is closed, which stops its upload.
  const large = await post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: base64(2_000_000) }] });
  expect(large.status).toBe(429);
  expect(large.headers.get("connection")).toBe("close");
  await large.arrayBuffer();
  // Refused before its body is read when it declares its length; without one (chunked), once read.
  const body = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello there" }] });
  const chunked = await fetch(h.base + "/v1/messages/count_tokens", {
    method: "POST",
    headers: { "x-api-key": a.key, "content-type": "application/json" },
    body: new Blob([body]).stream(),
  });
  expect(chunked.status).toBe(429);
  expect(((await chunked.json()) as { error: { message: string } }).error.message).toContain(`limited to ${COUNT_BYTES} bytes of text in flight per account`);
  const other = await post(b.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] });
  expect(other.status).toBe(200);
  await attack.stop();
  // Its bytes are given back once the request is over: A is admitted again.
  for (let i = 0; i < 2_000 && h.server.services.countTokensBytes.inUse(a.id) > 0; i++) await Bun.sleep(5);
  expect((await post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] })).status).toBe(200);
}, 120_000);

test("an account with too much text queued for counting gets 429 token_queue_full; billing counts and other accounts go on", async () => {
  // Output of A's earlier requests being counted (work already done, never refused).
  const stop = new AbortController();
  await idle(a.id);
  const billing = h.server.services.tokens.count([base64(9_000_000)], { account: a.id, signal: stop.signal }).catch(() => 0);
  expect(queued(a.id)).toBe(9_000_000);
  const refused = await post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] });
  expect(refused.status).toBe(429);
  const err = (await refused.json()) as { error: { type: string; message: string } };
  expect(err.error.type).toBe("rate_limit_error");
  expect(err.error.message).toContain(`at most ${QUEUE_CHARS} characters may be queued for token counting per account`);
  expect((await post(b.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] })).status).toBe(200);
  stop.abort();
  await billing;
  expect(queued(a.id)).toBe(0);
  expect((await post(a.key, "/v1/messages/count_tokens", { model: MODEL, messages: [{ role: "user", content: "hello there" }] })).status).toBe(200);
}, 120_000);

test("texts costly to tokenize, up to 8 MB, get an answer on every endpoint: never a 5xx", async () => {
  const statuses: string[] = [];
  for (const text of ["a".repeat(120_000), "a".repeat(8 * 1024 * 1024 - 200)]) {
    const messages = [{ role: "user", content: text }];
    for (const [path, body] of [
      ["/v1/messages/count_tokens", { model: MODEL, messages }],
      ["/v1/chat/completions", { model: MODEL, messages, max_tokens: 16 }],
      ["/v1/messages", { model: MODEL, messages, max_tokens: 16 }],
      ["/v1/responses", { model: MODEL, input: text, max_output_tokens: 16, store: false }],
    ] as const) {
      const res = await post(a.key, path, body);
      await res.arrayBuffer();
      statuses.push(`${path} ${res.status}`);
    }
  }
  for (const s of statuses) expect(s).toMatch(/ (200|400|413|429)$/);
}, 180_000);
