/**
 * An upstream that sends a late second reply after a complete keep-alive one: the late bytes must
 * never reach another account. Upstream connections are pooled per account (docs/upstream-client.md,
 * "Behaviour operators see"), so a pooled connection one account used never carries another's request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { chatCompletion, jsonReply, rawUpstream, requestJson, type RawUpstream } from "./support/raw-upstream";

/** How long after its complete reply the upstream repeats it on the same connection. */
const LATE_MS = 30;
/** How long the upstream works on a request: longer than LATE_MS, as a real engine is. */
const WORK_MS = 60;
const ROUNDS = 40;

let upstream: RawUpstream;
let h: Harness;
/** The same upstream behind a route with "keep_alive": false. */
let closing: Harness;

beforeAll(async () => {
  // Echoes the prompt as the reply after WORK_MS, and LATE_MS later sends it again, unasked.
  upstream = rawUpstream((socket, request) => {
    const prompt = String(requestJson(request).messages[0].content);
    const reply = jsonReply(chatCompletion(prompt));
    setTimeout(() => {
      socket.write(reply);
      setTimeout(() => socket.write(reply), LATE_MS);
    }, WORK_MS);
  });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url });
  const routes = { upstreams: { raw: { base_url: upstream.url, keep_alive: false } }, models: { "glm-4.6": [{ upstream: "raw" }] } };
  closing = await startHarness({ SWITCHYARD_ROUTES: JSON.stringify(routes) });
});
afterAll(async () => {
  await h.stop();
  await closing.stop();
  upstream.stop();
});

async function ask(key: string, prompt: string, gateway = h): Promise<string | null> {
  const res = await fetch(gateway.base + "/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "glm-4.6", max_tokens: 20, messages: [{ role: "user", content: prompt }] }),
  });
  if (res.status !== 200) {
    await res.text();
    return null;
  }
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

/** Two accounts send ROUNDS requests each, at once; counts the replies that are not their own. */
async function twoAccounts(gateway: Harness) {
  const a = await gateway.account(10, "a");
  const b = await gateway.account(10, "b");
  let leaks = 0;
  let wrongRequest = 0;
  let answered = 0;
  const run = async (key: string, own: string, other: string) => {
    for (let i = 0; i < ROUNDS; i++) {
      const prompt = `${own}-${i}`;
      const got = await ask(key, prompt, gateway);
      if (got === null) continue;
      answered++;
      if (got.startsWith(`${other}-`)) leaks++;
      else if (got !== prompt) wrongRequest++;
    }
  };
  await Promise.all([run(a.key, "tenant-a", "tenant-b"), run(b.key, "tenant-b", "tenant-a")]);
  return { leaks, wrongRequest, answered };
}

describe("late upstream bytes", () => {
  test(`pooled per account: in ${ROUNDS} rounds of two accounts' requests no reply carries the other account's text`, async () => {
    const r = await twoAccounts(h);
    console.log(`keep-alive: ${r.leaks} of ${r.answered} answers carried the other account's text; ${r.wrongRequest} carried the same account's earlier text`);
    expect(r.answered).toBe(2 * ROUNDS);
    expect(r.leaks).toBe(0);
  });

  test(`a route with "keep_alive": false: every reply is its own request's`, async () => {
    const before = upstream.connections();
    const r = await twoAccounts(closing);
    expect(r).toEqual({ leaks: 0, wrongRequest: 0, answered: 2 * ROUNDS });
    // One connection per request.
    expect(upstream.connections() - before).toBe(2 * ROUNDS);
  });
});
