/**
 * Stored Responses retention and per-account quota, end to end on both stores: a turn past the
 * retention period is 404 on GET, unusable as previous_response_id (404 naming the parameter) or
 * by item_reference (400 naming the field), and the sweep deletes its rows; past the quota the
 * account's oldest turns are deleted first, and a turn larger than the whole quota is served with
 * store: false and not kept. The clock is injected (moved forward, never slept on).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { describeEachStore } from "./support/stores";

const MODEL = "glm-4.6";
const DAY_MS = 86_400_000;
const QUOTA = 6_000;

describeEachStore("stored Responses: retention and quota", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let offsetMs = 0;

  beforeAll(async () => {
    fake = startFakeUpstream();
    h = await startHarness(
      { SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_RESPONSES_QUOTA_BYTES: String(QUOTA) },
      { clock: () => Date.now() + offsetMs },
      store,
    );
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  const call = (key: string, method: string, path: string, body?: unknown) =>
    fetch(h.base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
  const create = (key: string, body: Record<string, unknown>) => call(key, "POST", "/v1/responses", { model: MODEL, ...body });

  describe("retention (default 30 days)", () => {
    test("an expired turn is 404 on GET and as previous_response_id, its items unknown; the sweep deletes it", async () => {
      const acct = await h.account(5);
      const first = await create(acct.key, { input: "Remember this." });
      expect(first.status).toBe(200);
      const id = first.body.id as string;
      const itemId = first.body.output[0].id as string;
      // Day 29: still there, and usable.
      offsetMs = 29 * DAY_MS;
      expect((await call(acct.key, "GET", `/v1/responses/${id}`)).status).toBe(200);
      expect((await create(acct.key, { input: "And now?", previous_response_id: id })).status).toBe(200);
      expect(await h.server.services.responses.sweep()).toBe(0);
      // Day 31: expired for every read, before any sweep.
      offsetMs = 31 * DAY_MS;
      const got = await call(acct.key, "GET", `/v1/responses/${id}`);
      expect(got.status).toBe(404);
      expect(got.body.error.code).toBe("not_found");
      expect((await call(acct.key, "GET", `/v1/responses/${id}/input_items`)).status).toBe(404);
      const next = await create(acct.key, { input: "Continue.", previous_response_id: id });
      expect(next.status).toBe(404);
      expect(next.body.error).toMatchObject({ param: "previous_response_id" });
      expect(next.body.error.message).toContain(id);
      const ref = await create(acct.key, { input: [{ type: "item_reference", id: itemId }] });
      expect(ref.status).toBe(400);
      expect(ref.body.error.param).toBe("input[0].id");
      expect((await h.probe.storedResponse(id)).rows).toBe(1);
      // The sweep deletes the expired rows (the turn of day 29 too: created on day 29, it lives to day 59).
      expect(await h.server.services.responses.sweep()).toBeGreaterThanOrEqual(1);
      expect(await h.probe.storedResponse(id)).toEqual({ rows: 0, items: 0 });
      expect((await h.probe.storedResponses(acct.id)).length).toBe(1);
      offsetMs = 0;
    });
  });

  describe(`quota (${QUOTA} bytes here)`, () => {
    test("past the quota the account's oldest turns are deleted first; the newest is always kept", async () => {
      const acct = await h.account(5);
      const other = await h.account(5);
      const theirs = await create(other.key, { input: "Mine." });
      const created: string[] = [];
      let evicted = false;
      for (let i = 0; i < 8; i++) {
        offsetMs += 1_000; // one turn a second: created_at orders them
        const r = await create(acct.key, { input: `Turn ${i}: ${"x".repeat(400)}` });
        expect(r.status).toBe(200);
        expect(r.body.store).toBe(true);
        created.push(r.body.id);
        const kept = await h.probe.storedResponses(acct.id);
        const ids = kept.map((k) => k.id);
        // What is kept is the newest turns, in order, within the quota, the one just made included.
        expect(ids).toEqual(created.slice(created.length - ids.length));
        expect(kept.reduce((sum, k) => sum + k.size, 0)).toBeLessThanOrEqual(QUOTA);
        if (ids.length < created.length) evicted = true;
      }
      expect(evicted).toBe(true);
      expect((await call(acct.key, "GET", `/v1/responses/${created[0]}`)).status).toBe(404);
      expect((await call(acct.key, "GET", `/v1/responses/${created.at(-1)}`)).status).toBe(200);
      // Another account's turns are never evicted for this one.
      expect((await call(other.key, "GET", `/v1/responses/${theirs.body.id}`)).status).toBe(200);
    });

    test("a turn larger than the whole quota is served with store: false and not kept; the others stay", async () => {
      const acct = await h.account(5);
      const small = await create(acct.key, { input: "Small." });
      const big = await create(acct.key, { input: "y".repeat(QUOTA + 100) });
      expect(big.status).toBe(200);
      expect(big.body.status).toBe("completed");
      expect(big.body.store).toBe(false);
      expect((await call(acct.key, "GET", `/v1/responses/${big.body.id}`)).status).toBe(404);
      expect((await h.probe.storedResponse(big.body.id)).rows).toBe(0);
      expect((await call(acct.key, "GET", `/v1/responses/${small.body.id}`)).status).toBe(200);
    });

    test("streamed: the same rule, said in response.completed", async () => {
      const acct = await h.account(5);
      const res = await fetch(h.base + "/v1/responses", {
        method: "POST",
        headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, input: "z".repeat(QUOTA + 100), stream: true }),
      });
      const text = await res.text();
      const completed = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6))).at(-1);
      expect(completed.type).toBe("response.completed");
      expect(completed.response.store).toBe(false);
      expect((await h.probe.storedResponse(completed.response.id)).rows).toBe(0);
    });
  });
});
