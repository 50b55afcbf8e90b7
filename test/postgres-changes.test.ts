/**
 * Changes reach every instance on one PostgreSQL database within a second: a key revoked or an
 * account's limits changed through another instance's admin API, an account disabled or credits
 * added by the CLI (another process, straight against the database). Two servers here, A and B,
 * on one database; A has the key's owner cached when each change is made elsewhere.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { testDatabase } from "./support/postgres";
import { chat, rateHeaders, setLimits } from "./support/gateway-client";

const ROOT = join(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

let fake: FakeUpstream;
let url: string;
let a: Harness;
let b: Harness;
const cliDir = mkdtempSync(join(tmpdir(), "switchyard-pg-cli-"));

beforeAll(async () => {
  fake = startFakeUpstream();
  url = await testDatabase();
  const env = { SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DATABASE_URL: url };
  a = await startHarness(env, {}, "postgres");
  b = await startHarness(env, {}, "postgres");
}, 60_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  fake?.stop();
  rmSync(cliDir, { recursive: true, force: true });
});

async function cli(...args: string[]) {
  const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], {
    cwd: tmpdir(),
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SWITCHYARD_DATA_DIR: cliDir, SWITCHYARD_LOG_LEVEL: "silent", SWITCHYARD_DATABASE_URL: url },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`cli ${args.join(" ")}: ${stderr}`);
  return JSON.parse(stdout);
}

/**
 * Sends requests to A until `done` holds of the response; the time that took after the change
 * (printed, never asserted on: a loaded machine must not fail the suite; Infinity when it never did).
 */
async function untilOnA(key: string, done: (res: Response) => boolean, since: number): Promise<number> {
  for (let i = 0; i < 300; i++) {
    const res = await chat(a, key, { max_tokens: 5 });
    await res.text();
    if (done(res)) return performance.now() - since;
    await Bun.sleep(5);
  }
  return Infinity;
}

test("a key revoked on instance B stops working on instance A within a second", async () => {
  const acct = await b.account(5);
  expect((await chat(a, acct.key)).status).toBe(200); // A has the owner cached now
  const keyId = (await b.admin("GET", `/admin/accounts/${acct.id}/keys`)).body.data[0].id;
  const t0 = performance.now();
  expect((await b.admin("DELETE", `/admin/keys/${keyId}`)).status).toBe(200);
  const took = await untilOnA(acct.key, (r) => r.status === 401, t0);
  expect(took).not.toBe(Infinity);
  console.log(`revoked on B, refused on A after ${Math.round(took)} ms`);
});

test("limits changed on instance B apply on instance A within a second", async () => {
  const acct = await a.account(5);
  expect(rateHeaders(await chat(a, acct.key)).limit).toBe("600");
  const t0 = performance.now();
  await setLimits(b, acct.id, { rate_limit_rpm: 42 });
  const took = await untilOnA(acct.key, (r) => rateHeaders(r).limit === "42", t0);
  expect(took).not.toBe(Infinity);
  console.log(`limits changed on B, applied on A after ${Math.round(took)} ms`);
});

test("the CLI against the database: an account disabled stops it on A within a second; credits added are usable at once", async () => {
  const created = await cli("accounts", "create", "cli-made", "--credits", "0.000001");
  const key = (await cli("keys", "create", created.id)).key as string;
  // Created by the CLI, used on A: a key made anywhere works at once.
  const poor = await chat(a, key, { max_tokens: 5 });
  expect(poor.status).toBe(402);
  await cli("credits", "add", created.id, "5");
  expect((await chat(a, key, { max_tokens: 5 })).status).toBe(200);
  // Timed from the moment the CLI has committed (its process start-up is not the change).
  await cli("accounts", "update", created.id, "--disabled", "true");
  const t0 = performance.now();
  const took = await untilOnA(key, (r) => r.status === 403, t0);
  expect(took).not.toBe(Infinity);
  // What A leased of the account goes back once it hears of the change (a recall of its own).
  let shown = await cli("accounts", "show", created.id);
  for (let i = 0; i < 40 && shown.reserved !== 0; i++) {
    await Bun.sleep(250);
    shown = await cli("accounts", "show", created.id);
  }
  expect(shown).toMatchObject({ disabled: true, reserved: 0 });
  expect(shown.balance).toBeLessThan(5.000001);
  console.log(`disabled by the CLI, refused on A after ${Math.round(took)} ms`);
}, 60_000);
