/**
 * An account that retries refused large uploads at once is paced (src/limits/refusal-pacer.ts):
 * its repeated 429 is held for its Retry-After instead of being answered at once, bounded per
 * account, released when its client leaves, and other accounts are answered meanwhile. The pacing
 * window here is a minute, so what is held stays held while the test looks: nothing is timed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { post, setLimits } from "./support/gateway-client";
import { waitFor } from "./support/chat-client";

const MODEL = "glm-4.6";
let h: Harness;
let fake: FakeUpstream;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, { refusalPacing: { windowMs: 60_000, perAccount: 2, total: 100 } });
  a = await h.account(10);
  b = await h.account(10);
  // One request a minute: A's first is admitted, every later one refused before its body is read.
  await setLimits(h, a.id, { rate_limit_rpm: 1 });
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

const pacer = () => h.server.services.refusalPacer;
const large = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x".repeat(2 * 1024 * 1024) }] });
const small = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello" }] });

/** A count_tokens upload that may be abandoned; `settled` turns true once it was answered. */
function upload(body: string) {
  const abort = new AbortController();
  const state = { settled: false, status: 0 };
  const done = fetch(h.base + "/v1/messages/count_tokens", { method: "POST", headers: { "x-api-key": a.key, "content-type": "application/json" }, body, signal: abort.signal })
    .then(async (r) => {
      state.status = r.status;
      await r.arrayBuffer();
    })
    .catch(() => {})
    .finally(() => (state.settled = true));
  return { abort: () => abort.abort(), state, done };
}

test("a repeated large refusal is held, at most perAccount of them; small ones and other accounts are answered at once", async () => {
  expect((await post(h, "/v1/messages/count_tokens", a.key, JSON.parse(small))).status).toBe(200); // the minute's one request

  // The first large refusal is answered at once, closing its connection.
  const first = upload(large);
  await first.done;
  expect(first.state.status).toBe(429);
  expect(pacer().held(a.id)).toBe(0);

  // Retried at once: held (the pacing window is a minute here), as is the next one.
  const second = upload(large);
  const third = upload(large);
  expect(await waitFor(() => pacer().held(a.id) === 2, 30_000)).toBe(true);
  // Past perAccount: answered at once.
  const fourth = upload(large);
  await fourth.done;
  expect(fourth.state.status).toBe(429);
  // A small refusal is never held; another account is served meanwhile.
  expect((await post(h, "/v1/messages/count_tokens", a.key, JSON.parse(small))).status).toBe(429);
  expect((await post(h, "/v1/messages/count_tokens", b.key, JSON.parse(small))).status).toBe(200);
  expect([second.state.settled, third.state.settled]).toEqual([false, false]);
  expect(pacer().held(a.id)).toBe(2);

  // A client that leaves gives its held place back.
  second.abort();
  third.abort();
  await Promise.all([second.done, third.done]);
  expect(await waitFor(() => pacer().held() === 0, 30_000)).toBe(true);
}, 60_000);
