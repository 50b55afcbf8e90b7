/**
 * Crashed instances against real PostgreSQL: a survivor releases the holds, slot leases and
 * credit leases of an instance whose heartbeat expired, exactly once, and never anything of a
 * live instance; a released instance can no longer take holds and registers again.
 */
import { postOf } from "../../../test/support/post-request";
import { describe, expect, test } from "bun:test";
import { StoreUnavailable } from "../../billing/ledger-store";
import { usePgFixture, type PgInstance } from "../../../test/support/postgres-store";

const f = usePgFixture();

const limits = { rateLimitRpm: 1_000_000, concurrencyLimit: 100 };
let seq = 0;

/** Requests in flight on the account as the database counts them: every instance's slot leases. */
async function slotsTaken(acct: string): Promise<number> {
  const [r] = (await f.a.db.sql`SELECT in_flight FROM limit_state WHERE account_id = ${acct}`) as [{ in_flight: number }];
  return Number(r.in_flight);
}
async function slotLease(inst: PgInstance, acct: string): Promise<number> {
  const [r] = (await f.a.db.sql`SELECT COALESCE(SUM(amount), 0)::int AS n FROM leases WHERE instance_id = ${inst.registry.id} AND kind = 'slots' AND subject = ${acct}`) as [{ n: number }];
  return r.n;
}

/** Takes `n` slots and `n` holds of `amount` on `inst`, as n requests in flight would. */
async function inFlight(inst: PgInstance, acct: string, n: number, amount: number) {
  for (let i = 0; i < n; i++) {
    const admission = await inst.limiter.admit(acct, limits);
    expect(admission.ok).toBe(true);
    expect(await inst.ledger.grant({ requestId: `if_${++seq}_${acct}`, accountId: acct, amount, endpoint: "/v1/chat/completions", model: "m" })).toEqual({ ok: true, direct: true });
  }
}

describe("survivors release a dead instance", () => {
  test("holds and slots of an expired instance are released by one survivor, exactly once", async () => {
    const acct = await f.account(100_000);
    const dead = await f.instance({ timeoutMs: 500 });
    await inFlight(dead, acct, 3, 1000);
    await inFlight(f.a, acct, 1, 1000);
    dead.registry.halt(); // SIGKILL: no heartbeat, no release
    expect(await f.a.registry.reap()).toEqual([]); // not expired yet
    await Bun.sleep(700);
    // Three survivors pass at once: exactly one of them releases it.
    const survivors = [f.a, await f.instance(), await f.instance()];
    const deadSlots = await slotLease(dead, acct);
    expect(deadSlots).toBeGreaterThanOrEqual(3);
    const passes = (await Promise.all(survivors.map((s) => s.registry.reap()))).flat().filter((r) => r.instanceId === dead.registry.id);
    expect(passes).toEqual([{ instanceId: dead.registry.id, holdsVoided: 3, slotsReleased: deadSlots }]);
    expect(await f.balances(acct)).toEqual({ balance: 100_000, reserved: 1000 });
    expect(await slotsTaken(acct)).toBe(await slotLease(f.a, acct));
    expect(f.a.limiter.inFlight(acct)).toBe(1);
    expect((await f.a.registry.reap()).filter((r) => r.instanceId === dead.registry.id)).toEqual([]);
    // The survivor's own request is untouched and settles normally.
    const [{ request_id }] = (await f.a.db.sql`SELECT request_id FROM holds WHERE account_id = ${acct} AND state = 'pending'`) as [{ request_id: string }];
    expect(await f.a.ledger.post(postOf({ requestId: request_id, amount: 400, serviceTier: "default" }))).toMatchObject({ charged: 400, fresh: true });
    // A request of the dead instance that completes late can no longer be charged.
    const [{ request_id: lost }] = (await f.a.db.sql`SELECT request_id FROM holds WHERE instance_id = ${dead.registry.id} LIMIT 1`) as [{ request_id: string }];
    await expect(dead.ledger.post(postOf({ requestId: lost, amount: 1, serviceTier: "default" }))).rejects.toMatchObject({ detail: expect.stringContaining("without a pending hold") });
    expect(await f.balances(acct)).toEqual({ balance: 99_600, reserved: 0 });
  });

  test("nothing of a live instance is ever released, however short its timeout", async () => {
    const acct = await f.account(100_000);
    const live = await f.instance({ timeoutMs: 600 });
    live.registry.start(); // heartbeats every 200 ms
    await inFlight(live, acct, 2, 1000);
    const until = Date.now() + 2000;
    const released = [];
    while (Date.now() < until) {
      released.push(...(await f.a.registry.reap()).filter((r) => r.instanceId === live.registry.id));
      await Bun.sleep(50);
    }
    expect(released).toEqual([]);
    expect(await f.balances(acct)).toEqual({ balance: 100_000, reserved: 2000 });
    expect(await slotLease(live, acct)).toBeGreaterThanOrEqual(2);
    expect(live.limiter.inFlight(acct)).toBe(2);
    live.registry.halt();
  });

  test("a released instance cannot take holds or slots, and registers again under a new id at once", async () => {
    const acct = await f.account(10_000);
    let reregistered: string[] = [];
    const stalled = await f.instance({ timeoutMs: 300, onReregistered: (from, to) => (reregistered = [from, to]) });
    const oldId = stalled.registry.id;
    await Bun.sleep(450); // it stalled past its timeout
    expect((await f.a.registry.reap()).map((r) => r.instanceId)).toContain(oldId);
    const refused = await Promise.resolve(stalled.ledger.grant({ requestId: `st_${acct}`, accountId: acct, amount: 1, endpoint: "e", model: "m" })).catch((e) => e);
    expect(refused).toBeInstanceOf(StoreUnavailable);
    expect(await Promise.resolve(stalled.limiter.admit(acct, limits)).catch((e) => e)).toBeInstanceOf(StoreUnavailable);
    // The refused write made it register again at once, without waiting for its next beat.
    for (let i = 0; i < 100 && reregistered.length === 0; i++) await Bun.sleep(20);
    expect(reregistered).toEqual([oldId, stalled.registry.id]);
    expect(stalled.registry.id).not.toBe(oldId);
    expect(await stalled.ledger.grant({ requestId: `st2_${acct}`, accountId: acct, amount: 1, endpoint: "e", model: "m" })).toEqual({ ok: true, direct: true });
    stalled.registry.halt();
  });

  test("a clean stop releases the instance at once, leaving nothing for survivors", async () => {
    const acct = await f.account(10_000);
    const leaving = await f.instance({ timeoutMs: 60_000 });
    await inFlight(leaving, acct, 2, 100);
    await leaving.registry.stop();
    expect(await f.balances(acct)).toEqual({ balance: 10_000, reserved: 0 });
    expect(await slotsTaken(acct)).toBe(0);
    expect((await f.a.registry.reap()).filter((r) => r.instanceId === leaving.registry.id)).toEqual([]);
  });
});
