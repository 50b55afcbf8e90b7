/**
 * Keys only in headers: a key or admin token in the URL (?access_token=, ?api_key=), where proxies
 * and browsers log it, is refused with 401 telling the client to use the Authorization header —
 * even when a valid header comes with it — and the value is never echoed. Nothing is billed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { messages } from "./support/gateway-client";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  acct = await h.account(5);
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

const chatBody = JSON.stringify({ model: "glm-4.6", messages });

async function expectRefused(res: Response, secret: string, param: string) {
  expect(res.status).toBe(401);
  const text = await res.text();
  expect(text).not.toContain(secret);
  const err = JSON.parse(text).error;
  if ("code" in err) expect(err.code).toBe("credential_in_query");
  else expect(err.type).toBe("authentication_error"); // the Anthropic shape
  expect(err.message).toContain(`'${param}' query parameter`);
  expect(err.message).toContain("Authorization: Bearer <key>");
}

describe("a key in the query string", () => {
  test.each([
    ["POST", "/v1/chat/completions", "access_token"],
    ["POST", "/v1/chat/completions", "api_key"],
    ["POST", "/v1/embeddings", "access_token"],
    ["GET", "/v1/key", "access_token"],
    ["GET", "/v1/credits", "api_key"],
    ["GET", "/v1/usage", "access_token"],
  ])("%s %s?%s= gets 401 naming the header, the key never echoed", async (method, path, param) => {
    const res = await fetch(`${h.base}${path}?${param}=${encodeURIComponent(acct.key)}`, {
      method,
      headers: method === "POST" ? { "content-type": "application/json" } : {},
      body: method === "POST" ? chatBody : undefined,
    });
    await expectRefused(res, acct.key, param);
  });

  test("is refused even alongside a valid Authorization header, and nothing reaches the upstream or the ledger", async () => {
    const before = fake.requests.length;
    const balance = h.balanceUnits(acct.id);
    const res = await fetch(`${h.base}/v1/chat/completions?access_token=${acct.key}`, {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: chatBody,
    });
    await expectRefused(res, acct.key, "access_token");
    expect(fake.requests.length).toBe(before);
    expect(h.balanceUnits(acct.id)).toEqual(balance);
  });

  test("on /v1/messages the Anthropic error shape says the same; x-api-key in the header still works", async () => {
    const refused = await fetch(`${h.base}/v1/messages?api_key=${acct.key}`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "glm-4.6", max_tokens: 16, messages }),
    });
    await expectRefused(refused, acct.key, "api_key");
    const ok = await fetch(`${h.base}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": acct.key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "glm-4.6", max_tokens: 16, messages }),
    });
    expect(ok.status).toBe(200);
    await ok.text();
  });

  test("the admin token in the query is refused the same way (and is not counted as a wrong token)", async () => {
    for (let i = 0; i < 6; i++) await expectRefused(await fetch(`${h.base}/admin/accounts?access_token=${ADMIN_TOKEN}`), ADMIN_TOKEN, "access_token");
    expect((await fetch(`${h.base}/admin/accounts`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
  });

  test("the header alone works, in any case of the scheme", async () => {
    for (const scheme of ["Bearer", "bearer"]) {
      const res = await fetch(`${h.base}/v1/key`, { headers: { authorization: `${scheme} ${acct.key}` } });
      expect(res.status).toBe(200);
      await res.text();
    }
  });
});
