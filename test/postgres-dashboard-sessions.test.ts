/**
 * Dashboard sessions follow key changes made on another instance (docs/operate.md, "The dashboard"): two
 * servers, A and B, on one PostgreSQL database. A session is open on A, whose key owner is
 * cached there; the key is given a limit, then an expiry in the past, or is revoked through B's
 * admin API. The change feed drops A's cached owners (store/postgres/changes.ts), and the
 * session, checked on every use, narrows or ends. Waits are for liveness only (at most 15 s).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { testDatabase } from "./support/postgres";
import { dashboardSession, type DashboardSession } from "./support/dashboard-session";

let fake: FakeUpstream;
let a: Harness;
let b: Harness;

beforeAll(async () => {
  fake = startFakeUpstream();
  const env = { SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DATABASE_URL: await testDatabase() };
  a = await startHarness(env, {}, "postgres");
  b = await startHarness(env, {}, "postgres");
}, 60_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  fake?.stop();
});

/** An account made on B with one key (no controls), signed in to A's dashboard. */
async function sessionOnA(): Promise<{ accountId: string; keyId: string; session: DashboardSession }> {
  const acct = await b.account(5, "pg-session");
  const keyId = (await b.admin("GET", `/admin/accounts/${acct.id}/keys`)).body.data[0].id as string;
  const session = await dashboardSession(a, "account", acct.key);
  expect((await session.call("GET", "/account/keys")).status).toBe(200); // A has the owner cached now
  return { accountId: acct.id, keyId, session };
}

/** Calls until `done` holds of the status; the last status seen. */
async function until(call: () => Promise<Response>, done: (status: number) => boolean): Promise<number> {
  let status = 0;
  for (let i = 0; i < 300; i++) {
    const res = await call();
    await res.body?.cancel();
    status = res.status;
    if (done(status)) return status;
    await Bun.sleep(50);
  }
  return status;
}

test("a limit given to the key on B takes key management away from its session on A", async () => {
  const { keyId, session } = await sessionOnA();
  expect((await b.admin("PATCH", `/admin/keys/${keyId}`, { limit: 1 })).status).toBe(200);
  expect(await until(() => session.call("POST", "/account/keys", { name: "after-limit" }), (s) => s !== 201)).toBe(403);
  expect((await session.call("GET", "/account")).status).toBe(200);
});

test("an expiry in the past set on B ends the session on A", async () => {
  const { keyId, session } = await sessionOnA();
  expect((await b.admin("PATCH", `/admin/keys/${keyId}`, { expires_at: "2021-01-01T00:00:00Z" })).status).toBe(200);
  expect(await until(() => session.call("GET", "/account"), (s) => s !== 200)).toBe(401);
  expect(((await (await session.call("GET", "/session")).json()) as any).kind).toBeNull();
});

test("a key revoked on B ends its session on A", async () => {
  const { keyId, session } = await sessionOnA();
  expect((await b.admin("DELETE", `/admin/keys/${keyId}`)).status).toBe(200);
  expect(await until(() => session.call("GET", "/account"), (s) => s !== 200)).toBe(401);
});
