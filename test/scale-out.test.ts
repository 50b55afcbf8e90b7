/**
 * Three server processes on one PostgreSQL database (a server of this file's own), as three
 * instances behind a load balancer would run — each request of a test goes to the next process
 * in turn:
 *   - 300 concurrent requests against a balance covering exactly 37: exactly 37 succeed, the
 *     balance never goes negative, Σ charges = the balance change;
 *   - rate_limit_rpm 10 across the three: exactly 10 pass in the window;
 *   - concurrency_limit 2: never more than 2 in flight across them;
 *   - one process SIGKILLed mid-stream: a survivor gives back its leases (money, slots) within the
 *     heartbeat timeout (2 s here), completed requests stay charged once (what the dead process
 *     had not shipped yet is shipped when it starts again), unfinished ones are not charged;
 *   - PostgreSQL restarted under load: nothing but 200 or 503 (the 503s before the upstream), no
 *     lost or double charge (charges journaled meanwhile are shipped once it is back).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgres, type PgServer } from "./support/postgres";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { spawnServer, type ServerProcess } from "./support/server-process";
import { pgProbe, type StoreProbe } from "./support/store-probe";
import { chat, messages, readUntil } from "./support/gateway-client";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { promptTokenBound } from "../src/tokens/tokens";
import { SQL } from "bun";

const ADMIN = "scale-out-admin-token-0123456789";
const MODEL = "glm-4.6";
const WORDS = ["a", "b", "c", "d", "e", "f"];
const TIMEOUT_S = 2;

let pg: PgServer;
let url: string;
let fake: FakeUpstream;
let probe: StoreProbe;
let sql: SQL;
const dirs: string[] = [];
const servers: ServerProcess[] = [];

function start(i: number): Promise<ServerProcess> {
  return spawnServer({
    SWITCHYARD_DATABASE_URL: url,
    SWITCHYARD_DATA_DIR: dirs[i]!,
    SWITCHYARD_MODELS_DIR: join(dirs[i]!, "models"),
    SWITCHYARD_ADMIN_TOKEN: ADMIN,
    SWITCHYARD_UPSTREAM_URL: fake.url,
    SWITCHYARD_INSTANCE_TIMEOUT_SECONDS: String(TIMEOUT_S),
    SWITCHYARD_DATABASE_POOL: "8",
  }, 60_000);
}

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase();
  fake = startFakeUpstream({ words: WORDS, promptTokens: promptTokenBound(messages) });
  for (let i = 0; i < 3; i++) dirs.push(mkdtempSync(join(tmpdir(), `switchyard-scale-${i}-`)));
  // Three instances starting at once also migrate at once (the advisory lock serialises them).
  servers.push(...(await Promise.all([0, 1, 2].map(start))));
  probe = pgProbe(url);
  sql = new SQL({ url, max: 2 });
}, 120_000);

afterAll(async () => {
  for (const s of servers) {
    s.proc.kill("SIGTERM");
    await s.exited;
  }
  await probe?.close();
  await sql?.close();
  fake?.stop();
  await pg?.destroy();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let turn = 0;
/** The next instance, round robin, as a load balancer would pick. */
const next = () => servers[turn++ % servers.length]!.base;

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(next() + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** An account created on one instance, its key made on another, its limits set on a third. */
async function account(usd: string, limits: { rate_limit_rpm: number; concurrency_limit: number }) {
  const a = await admin("POST", "/admin/accounts", { name: "scale", credits: usd });
  const k = await admin("POST", `/admin/accounts/${a.id}/keys`, {});
  await admin("PATCH", `/admin/accounts/${a.id}`, limits);
  return { id: a.id as string, key: k.key as string };
}

async function watchBalance(accountId: string) {
  let min = Infinity;
  let on = true;
  const loop = (async () => {
    while (on) {
      const { balance, reserved } = await probe.balance(accountId);
      min = Math.min(min, balance - reserved, balance);
      await Bun.sleep(2);
    }
  })();
  return async () => {
    on = false;
    await loop;
    return min;
  };
}

/** Waits until each of these requests has its charge in the database (instances ship them in batches). */
async function chargedAll(ids: string[], timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const missing = (await Promise.all(ids.map((id) => probe.charge(id)))).filter((c) => c === null).length;
    if (missing === 0 || Date.now() > until) return;
    await Bun.sleep(50);
  }
}

async function settledAll(accountId: string, timeoutMs = 5_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [b, c] = await Promise.all([probe.balance(accountId), probe.counts(accountId)]);
    if ((c.pendingHolds === 0 && b.reserved === 0) || Date.now() > until) return { ...b, ...c, sum: await probe.ledgerSum(accountId) };
    await Bun.sleep(20);
  }
}

test("300 concurrent requests over 3 instances, balance for exactly 37: exactly 37 succeed, never below zero, Σ charges = balance change", async () => {
  const perRequest = expectedChatCost(MODEL, promptTokenBound(messages), WORDS.length);
  const a = await account(unitsToUsd(perRequest * 37), { rate_limit_rpm: 100_000, concurrency_limit: 1_000 });
  fake.behave({ words: WORDS, promptTokens: promptTokenBound(messages), delayMs: 20 });
  const stop = await watchBalance(a.id);
  const results = await Promise.all(
    Array.from({ length: 300 }, async (_, i) => {
      const stream = i % 2 === 1;
      const res = await chat(servers[i % 3]!.base, a.key, { model: MODEL, max_tokens: WORDS.length, stream, stream_options: stream ? { include_usage: true } : undefined });
      const text = await res.text();
      return { status: res.status, id: res.headers.get("x-request-id")!, text };
    }),
  );
  const minAvailable = await stop();
  const ok = results.filter((r) => r.status === 200);
  expect(results.filter((r) => r.status !== 200 && r.status !== 402)).toEqual([]);
  expect(ok.length).toBe(37);
  await chargedAll(ok.map((r) => r.id));
  for (const r of results.filter((x) => x.status === 402)) expect(JSON.parse(r.text).error.code).toBe("insufficient_credits");
  expect(minAvailable).toBeGreaterThanOrEqual(0);
  const end = await settledAll(a.id);
  expect(end).toMatchObject({ balance: 0, reserved: 0, pendingHolds: 0, charges: 37, sum: 0 });
  const charges = await probe.charges(a.id);
  expect(new Set(charges.map((c) => c.request_id))).toEqual(new Set(ok.map((r) => r.id)));
  expect(charges.reduce((s, c) => s - c.amount, 0)).toBe(perRequest * 37);
  console.log(`scale-out: 300 requests over 3 instances, ${ok.length} served (by instance: ${[0, 1, 2].map((k) => ok.filter((r) => results.indexOf(r) % 3 === k).length).join("/")}), lowest available balance seen ${minAvailable}`);
}, 60_000);

test("rate_limit_rpm 10 across 3 instances: exactly 10 pass in the window", async () => {
  const a = await account("10", { rate_limit_rpm: 10, concurrency_limit: 1_000 });
  fake.behave({ words: WORDS, promptTokens: 9 });
  const t0 = performance.now();
  const res = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(servers[i % 3]!.base, a.key, { max_tokens: 6 })));
  const elapsed = performance.now() - t0;
  const bodies = await Promise.all(res.map((r) => r.json() as Promise<any>));
  const statuses = res.map((r) => r.status);
  // One unit comes back every 6 s: exactly 10 pass when all 30 arrive inside one window (the
  // usual case); on a machine slow enough to take longer, at most one more per 6 s elapsed.
  const passed = statuses.filter((s) => s === 200).length;
  expect(passed).toBeGreaterThanOrEqual(10);
  expect(passed).toBeLessThanOrEqual(10 + Math.floor(elapsed / 6_000));
  expect(statuses.filter((s) => s === 429).length).toBe(30 - passed);
  for (const [i, b] of bodies.entries()) if (statuses[i] === 429) expect(b.error.code).toBe("rate_limit_exceeded");
  // The three instances shared one bucket: the passes are spread over them.
  const perInstance = [0, 1, 2].map((k) => statuses.filter((s, i) => s === 200 && i % 3 === k).length);
  expect(perInstance.reduce((x, y) => x + y, 0)).toBe(passed);
  console.log(`scale-out: rpm 10 across 3 instances, 30 requests in ${Math.round(elapsed)} ms: ${passed} passed (${perInstance.join("/")}), ${30 - passed} refused 429`);
}, 60_000);

test("concurrency_limit 2 across 3 instances: never more than 2 in flight", async () => {
  const a = await account("10", { rate_limit_rpm: 100_000, concurrency_limit: 2 });
  fake.behave({ words: WORDS, promptTokens: 9, chunkDelayMs: 40 });
  fake.maxActive = fake.active;
  let maxInFlight = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [r] = (await sql`SELECT in_flight FROM limit_state WHERE account_id = ${a.id}`) as { in_flight: number }[];
      maxInFlight = Math.max(maxInFlight, r!.in_flight);
      await Bun.sleep(3);
    }
  })();
  // Twelve clients, each sending three streamed requests one after another, spread over the instances.
  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: 12 }, async (_, c) => {
      for (let j = 0; j < 3; j++) {
        const res = await chat(servers[(c + j) % 3]!.base, a.key, { stream: true, max_tokens: 6 });
        await res.text();
        statuses.push(res.status);
      }
    }),
  );
  sampling = false;
  await sampler;
  expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
  expect(fake.maxActive).toBeLessThanOrEqual(2);
  expect(maxInFlight).toBeLessThanOrEqual(2);
  console.log(`scale-out: concurrency 2 across 3 instances, ${statuses.length} streams: ${statuses.filter((s) => s === 200).length} served, ${statuses.filter((s) => s === 429).length} refused 429; most in flight at the upstream ${fake.maxActive}, in the database ${maxInFlight}`);
}, 60_000);

test("an instance SIGKILLed mid-stream: a survivor gives back its leases within the heartbeat timeout; completed requests charged once, unfinished ones not", async () => {
  const a = await account("10", { rate_limit_rpm: 100_000, concurrency_limit: 100 });
  const victim = servers[0]!;
  const name = readFileSync(join(dirs[0]!, "instance-name"), "utf8").trim();
  const victimId = ((await sql`SELECT id FROM instances WHERE name = ${name} AND released_at IS NULL`) as { id: string }[])[0]!.id;
  // Completed on the victim before it dies.
  fake.behave({ words: WORDS, promptTokens: 9 });
  const done: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await chat(victim.base, a.key, { max_tokens: 6 });
    expect(r.status).toBe(200);
    await r.text();
    done.push(r.headers.get("x-request-id")!);
  }
  // Mid-stream on the victim, and one stream on a survivor that must finish normally.
  fake.behave({ words: WORDS, promptTokens: 9, chunkDelayMs: 300 });
  const cut = await Promise.all(Array.from({ length: 4 }, () => chat(victim.base, a.key, { stream: true, max_tokens: 6 })));
  const cutIds = cut.map((r) => r.headers.get("x-request-id")!);
  for (const r of cut) await readUntil(r, (t) => t.includes('"content":"a"'));
  const survivorStream = await chat(servers[1]!.base, a.key, { stream: true, max_tokens: 6 });
  // The victim's requests hold in its memory, from its leases: four slots at least, and money.
  const leased = async () => (await sql`
    SELECT COALESCE(SUM(amount) FILTER (WHERE kind = 'slots'), 0)::int AS slots, COALESCE(SUM(amount) FILTER (WHERE kind = 'credit'), 0)::bigint AS credit
      FROM leases WHERE instance_id = ${victimId}`) as { slots: number; credit: string }[];
  const [held] = await leased();
  expect(held!.slots).toBeGreaterThanOrEqual(4);

  victim.proc.kill("SIGKILL");
  const killedAt = performance.now();
  await victim.exited;
  for (const r of cut) await r.text().catch(() => "");
  // A survivor notices the missing heartbeats and gives back the victim's leases.
  let releasedAfter = -1;
  for (let i = 0; i < 400; i++) {
    const [row] = await leased();
    if (row!.slots === 0 && Number(row!.credit) === 0) {
      releasedAfter = performance.now() - killedAt;
      break;
    }
    await Bun.sleep(25);
  }
  // Released (within the 10 s of polling; the figure is printed below, not asserted on).
  expect(releasedAfter).toBeGreaterThan(0);
  const survivorLog = [...servers[1]!.logs, ...servers[2]!.logs].find((l) => l.msg === "released the holds and slots of an instance whose heartbeat expired" && l.instance === victimId);
  expect(survivorLog).toBeDefined();

  expect(await survivorStream.text()).toContain("[DONE]");
  // What is spoken for is only what the live instances lease: the victim's money came back.
  const [acct] = (await sql`SELECT reserved::int AS reserved, leased::bigint AS leased FROM accounts WHERE id = ${a.id}`) as { reserved: number; leased: string }[];
  const [live] = (await sql`SELECT COALESCE(SUM(amount), 0)::bigint AS n FROM leases WHERE kind = 'credit' AND subject = ${a.id}`) as { n: string }[];
  expect(acct!.reserved).toBe(0);
  expect(Number(acct!.leased)).toBe(Number(live!.n));
  for (const id of cutIds) {
    expect(await probe.charge(id)).toBeNull();
    expect(await probe.hold(id)).toBeNull();
  }
  // The survivor's slot is given back once its response ended: nothing in flight is left but what live instances lease.
  let inFlight = -1;
  let liveSlots = -2;
  for (let i = 0; i < 250 && inFlight !== liveSlots; i++) {
    if (i > 0) await Bun.sleep(20);
    inFlight = ((await sql`SELECT in_flight FROM limit_state WHERE account_id = ${a.id}`) as { in_flight: number }[])[0]!.in_flight;
    liveSlots = ((await sql`SELECT COALESCE(SUM(amount), 0)::int AS n FROM leases WHERE kind = 'slots' AND subject = ${a.id}`) as { n: number }[])[0]!.n;
  }
  expect(inFlight).toBe(liveSlots);
  console.log(`scale-out: SIGKILL mid-stream; a survivor gave back its leases (${held!.slots} slots, ${held!.credit} units) ${Math.round(releasedAfter)} ms after the kill (timeout ${TIMEOUT_S} s)`);

  // The killed instance starts again on its data directory, ships what it had journaled, and serves.
  servers[0] = await start(0);
  await chargedAll(done);
  for (const id of done) expect((await probe.charge(id))?.request_id).toBe(id);
  expect((await chat(servers[0].base, a.key, { max_tokens: 6 })).status).toBe(200);
  const end = await settledAll(a.id);
  expect(end).toMatchObject({ reserved: 0, pendingHolds: 0 });
  expect(end.sum).toBe(end.balance);
}, 60_000);

test("PostgreSQL restarted under load: only 200 or 503, the 503s before the upstream, no lost or double charge", async () => {
  const a = await account("10", { rate_limit_rpm: 1_000_000, concurrency_limit: 1_000 });
  fake.behave({ words: WORDS, promptTokens: promptTokenBound(messages), delayMs: 10 });
  const perRequest = expectedChatCost(MODEL, promptTokenBound(messages), WORDS.length);
  const before = await settledAll(a.id);
  const upstreamBefore = fake.requests.length;
  const results: { status: number; id: string; code?: string; message?: string }[] = [];
  let running = true;
  const request = async (k: number) => {
    const res = await chat(servers[k % 3]!.base, a.key, { max_tokens: WORDS.length }).catch(() => null);
    if (!res) return;
    const body = (await res.json()) as any;
    results.push({ status: res.status, id: res.headers.get("x-request-id")!, code: body.error?.code, message: body.error?.message });
  };
  const clients = Array.from({ length: 12 }, async (_, c) => {
    for (let k = c; running; k++) await request(k);
  });
  // Served before the outage, on every instance.
  const served = () => results.filter((r) => r.status === 200).length;
  for (let i = 0; i < 200 && served() < 30; i++) await Bun.sleep(50);
  const beforeOutage = served();
  await pg.stop();
  // Down long enough for new requests to meet it (requests already charging wait for it to return,
  // and all twelve clients may be among them: so new requests are also sent from here).
  const stoppedAt = results.length;
  const fresh: Promise<void>[] = [];
  for (let i = 0; i < 100 && !results.slice(stoppedAt).some((r) => r.status === 503); i++) {
    fresh.push(request(i));
    await Bun.sleep(50);
  }
  await Bun.sleep(500);
  await pg.start();
  const restartedAt = results.length;
  // Load goes on until every instance serves again, and a little longer.
  const until = Date.now() + 20_000;
  while (Date.now() < until && results.slice(restartedAt).filter((r) => r.status === 200).length < 30) await Bun.sleep(100);
  await Bun.sleep(500);
  running = false;
  await Promise.all([...clients, ...fresh]);

  const ok = results.filter((r) => r.status === 200);
  const unavailable = results.filter((r) => r.status === 503);
  expect(results.filter((r) => r.status !== 200 && r.status !== 503)).toEqual([]);
  for (const r of unavailable) expect(r.code).toBe("service_unavailable");
  expect(beforeOutage).toBeGreaterThan(0);
  expect(unavailable.length).toBeGreaterThan(0);
  expect(results.slice(restartedAt).some((r) => r.status === 200)).toBe(true);
  // 503s before the upstream say nothing was billed; any other 503 came after the upstream.
  const refusedBefore = unavailable.filter((r) => r.message?.includes("Nothing was billed"));
  const afterUpstream = unavailable.length - refusedBefore.length;
  expect(fake.requests.length - upstreamBefore).toBe(ok.length + afterUpstream);

  await chargedAll(ok.map((r) => r.id), 30_000);
  const end = await settledAll(a.id, 20_000);
  expect(end).toMatchObject({ reserved: 0, pendingHolds: 0 });
  const charges = new Map((await probe.charges(a.id)).map((c) => [c.request_id, c.amount]));
  // Not lost: every 200 is charged, once (one entry per request id), its exact cost.
  for (const r of ok) expect(charges.get(r.id)).toBe(-perRequest);
  for (const r of refusedBefore) expect(charges.has(r.id)).toBe(false);
  expect(charges.size).toBeLessThanOrEqual(ok.length + afterUpstream);
  expect(end.sum).toBe(end.balance);
  expect(before.balance - end.balance).toBe([...charges.values()].reduce((s, x) => s - x, 0));
  console.log(`scale-out: PostgreSQL restarted under load: ${results.length} requests, ${ok.length} served and charged once, ${refusedBefore.length} refused 503 before the upstream, ${afterUpstream} failed after it`);
}, 90_000);
