/**
 * GET /readyz: 200 with the store, every configured model (chat: its routes' breakers; local
 * engines: loaded or not) and the requests in flight; 503 while the store cannot write; never an
 * upstream's name or address. /healthz stays pure liveness. (Stopping: test/graceful-stop.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
let fsyncFails = false;

beforeAll(async () => {
  fake = startFakeUpstream({ words: ["ok"] });
  h = await startHarness(
    { SWITCHYARD_UPSTREAM_URL: fake.url },
    { ledger: { fsync: (fd, cb) => (fsyncFails ? cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })) : require("node:fs").fsync(fd, cb)) } },
  );
  acct = await h.account(10);
}, 60_000);
afterAll(async () => {
  await h.stop();
  fake.stop();
});

test("ready: the store, each model and what is in flight; no upstream address", async () => {
  const res = await fetch(h.base + "/readyz");
  expect(res.status).toBe(200);
  const body = (await res.json()) as any;
  expect(body).toMatchObject({ status: "ready", store: { engine: "sqlite", ok: true }, requests_in_flight: expect.any(Number) });
  const ids = h.server.services.catalog.all().map((e) => e.id);
  expect(body.models.map((m: any) => m.id)).toEqual(ids);
  const glm = body.models.find((m: any) => m.id === "glm-4.6");
  expect(glm).toMatchObject({ kind: "chat", ready: true });
  expect(glm.routes.length).toBeGreaterThan(0);
  for (const r of glm.routes) expect(r).toEqual({ breaker: "closed", consecutive_failures: 0 });
  for (const m of body.models.filter((m: any) => m.kind !== "chat")) expect(m).toEqual({ id: m.id, kind: m.kind, ready: false, loaded: false });
  const host = new URL(fake.url).host;
  expect(JSON.stringify(body)).not.toContain(host);
});

test("a store that cannot write makes readiness 503 (liveness stays 200)", async () => {
  fsyncFails = true;
  try {
    const res = await chat(h, acct.key, { max_tokens: 5 });
    await res.text();
    const ready = await fetch(h.base + "/readyz");
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "store_unavailable", store: { ok: false, error: expect.stringContaining("cannot write") } });
    expect((await fetch(h.base + "/healthz")).status).toBe(200);
  } finally {
    fsyncFails = false;
  }
});
