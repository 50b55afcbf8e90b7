/**
 * A seeded randomized checker of the ledger (in the spirit of TigerBeetle's VOPR). It drives the
 * real domain ledger over a real store (backend.ts) — one instance on SQLite, two sharing one
 * database on PostgreSQL, each with its own hold book, leases and charge journal and its own
 * clock (the two 4 s apart; SQLite's one clock stepped back and forth by up to 3 s) — with random,
 * interleaved requests — reserve; settle honestly, over-reporting, or after a client left with
 * part of the output; fail without settling; release in a finally as every route does — while it
 * fills the disk, fails fsyncs (PostgreSQL: kills connections), holds the write lock from another
 * connection, stops and starts the database server, credits and debits accounts, changes keys'
 * limit_reset, and crashes and restarts instances. A failed fsync is final (the server stops): the
 * process is restarted then, and a request whose settle failed with it has an unknown outcome.
 * On a simulated clock it runs streams that end at their deadline (billed as delivered),
 * requests stuck past their hold's expiry, and the ledger's expiry sweep. After every step it
 * compares the store's committed state with a small reference model; at quiet points (faults
 * cleared, every request ended, every journal shipped) it checks the outcomes request by request.
 *
 * Requests are made with per-key spend limits too (some keys without one, some resetting daily,
 * weekly or monthly, which the checker moves forward by hours at random).
 *
 * Checked after every step (the invariants of billing/ledger.ts):
 *   balance ≥ 0, reserved ≥ 0, leased ≥ 0, and reserved + leased ≤ balance: direct holds and leases
 *   are always covered; reserved = Σ pending direct holds (per account and per key);
 *   what each instance holds in memory fits what it may spend: the balance (SQLite), or its lease
 *   less what it charged and did not ship (PostgreSQL), and its lease mirror never exceeds the
 *   lease the database has for it;
 *   a key's period_spent = Σ its charges counted in its stored period, and spent + held + leased
 *   never exceeds its limit (or what a limit_reset change found spent already);
 *   every new entry's balance_after = the previous balance ± its amount, and the newest = balance;
 *   every charge ≤ its hold, once per request, carrying the request's key; no charge for a failed
 *   request; a settle that resolved is in the store, or in its instance's journal, with exactly the
 *   charge the model expects; after a sweep, no hold older than the expiry is open.
 * Checked at quiet points and after each restart:
 *   no hold open anywhere; every request's outcome (charged exactly as reported / not charged)
 *   matches the model; an acknowledged charge is never lost to a crash (the restarted instance
 *   ships its journal).
 *
 * The model (random numbers, prices, what a charge must be, each request's record) is model.ts;
 * one request's task is request.ts.
 */
import { DomainError } from "../../../src/errors";
import { Ledger } from "../../../src/billing/ledger";
import { Log } from "../../../src/log";
import type { CheckerKey, LedgerBackend, Snapshot } from "./backend";
import { nextReset, periodStarts, periodOf, type LimitReset } from "../../../src/billing/key-periods";
import { CheckFailed, HOLD_EXPIRY_S, rng, type CheckerOptions, type CheckerReport, type RequestModel } from "./model";
import { runRequest, type RequestContext } from "./request";

export type { CheckerOptions, CheckerReport } from "./model";

export async function runLedgerChecker(backend: LedgerBackend, opts: CheckerOptions): Promise<CheckerReport> {
  const random = rng(opts.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const log = new Log("silent");
  const n = backend.instances;
  const leased = backend.leaseMirror !== undefined;

  // The simulated clock (ms): each step moves it on a few seconds; holds are dated and expired by
  // it, and key limit periods read from it (now and then it jumps hours, so periods roll over).
  // Each instance reads it with its own error: two instances 4 s apart; one instance's clock
  // stepped back and forth by up to 3 s.
  let clock = Date.UTC(2026, 0, 1) + int(0, 400) * 3_600_000;
  const skew = Array.from({ length: n }, (_, i) => (n === 1 ? 0 : i % 2 === 0 ? 2_000 : -2_000));
  let jitter = 0;
  const clockOf = (i: number) => clock + skew[i]! + jitter;
  const nowS = () => Math.floor(clock / 1000);
  // Refusals after a failure last 2 ms here, not 500: the checker runs thousands of steps a second.
  const ledgerOptions = (i: number) => ({ probeIntervalMs: 2, holdExpirySeconds: HOLD_EXPIRY_S, now: () => clockOf(i) });

  const stores: Awaited<ReturnType<LedgerBackend["open"]>>[] = [];
  const ledgers: Ledger[] = [];
  const gens: number[] = [];
  for (let i = 0; i < n; i++) {
    stores.push(await backend.open(i));
    ledgers.push(new Ledger(stores[i]!, log, ledgerOptions(i)));
    gens.push(0);
  }
  let step = 0;
  const report = {
    cacheCharges: 0, requests: 0, charged: 0, notCharged: 0, refusedCredits: 0, refusedKeyLimit: 0, refusedUnavailable: 0, clockMoves: 0, crashes: 0, faults: 0,
    deadlines: 0, expired: 0, expiredRefused: 0, databaseRestarts: 0, resetChanges: 0,
  };
  /** The first failure, also when a request task found it (it surfaces at the next step). */
  let failure: CheckFailed | null = null;
  const fail = (what: string): never => {
    failure ??= new CheckFailed(`ledger checker (${backend.name}), seed ${opts.seed}, step ${step}: ${what}`);
    throw failure;
  };

  // Accounts and what the model knows of their balances.
  const accounts: string[] = [];
  /** Σ entries seen so far per account, and the last entry id read. */
  const seenBalance = new Map<string, number>();
  let lastEntryId = 0;
  const requests = new Map<string, RequestModel>();
  /** Every charge entry seen, by request id. */
  const chargesSeen = new Map<string, number>();
  const live: Set<Promise<void>>[] = Array.from({ length: n }, () => new Set());
  let faults = { disk: false, fsync: false, lock: false, down: false };

  for (let i = 0; i < (opts.accounts ?? 3); i++) {
    const id = `acct_${i}`;
    // Some accounts run dry (402s happen), most can pay for a few dozen holds at a time.
    await ledgers[0]!.openAccount({ id, name: id, createdAt: 0 }, i === 0 ? int(500, 2_000) : int(10_000, 40_000), "seed");
    accounts.push(id);
    seenBalance.set(id, 0);
  }

  // Keys: per account one without a limit and two with one (never resetting, or on a period).
  const keysOf = new Map<string, CheckerKey[]>();
  const keyById = new Map<string, CheckerKey>();
  /** Every charge seen per key: when it counts for the key's periods, and how much. */
  const keyCharges = new Map<string, { at: number; amount: number }[]>();
  /** What a key had spent in its period when its limit_reset last changed (that period only). */
  const keyBase = new Map<string, { period: number; spent: number }>();
  for (const account of accounts) {
    const resets: LimitReset[] = ["daily", "weekly", "monthly"];
    const list: CheckerKey[] = [
      { id: `${account}_free`, accountId: account, limit: null, reset: null },
      { id: `${account}_once`, accountId: account, limit: int(1_000, 6_000), reset: null },
      { id: `${account}_period`, accountId: account, limit: int(200, 2_000), reset: pick(resets) },
    ];
    for (const k of list) {
      await backend.createKey(k);
      keyById.set(k.id, k);
      keyCharges.set(k.id, []);
    }
    keysOf.set(account, list);
  }

  const tick = () => new Promise<void>((r) => setImmediate(r));
  const requestContext: RequestContext = { seed: opts.seed, backend, random, int, pick, accounts, keysOf, gens, ledgers, requests, report, clockOf, nowS, tick, fail };

  function startRequest() {
    const inst = int(0, n - 1);
    const p: Promise<void> = runRequest(requestContext, inst).catch((e) => {
      if (e instanceof CheckFailed) throw e;
      fail(`a request task threw: ${String((e as Error)?.stack ?? e)}`);
    });
    const set = live[inst]!;
    set.add(p);
    p.then(
      () => set.delete(p),
      () => set.delete(p),
    );
  }
  const liveCount = () => live.reduce((s, l) => s + l.size, 0);

  async function setFault(kind: keyof typeof faults, on: boolean) {
    if (faults[kind] === on) return;
    if (kind === "down" && !backend.databaseDown) return;
    // A stopped server has no locks, triggers or connections to break.
    if (kind !== "down" && faults.down) return;
    faults = { ...faults, [kind]: on };
    report.faults += on ? 1 : 0;
    if (kind === "disk") await backend.diskFull(on);
    else if (kind === "fsync") await backend.fsyncFails(on);
    else if (kind === "lock") await backend.lock(on);
    else {
      if (on) report.databaseRestarts++;
      // A stopped server takes its locks and triggers with it.
      if (on) faults = { ...faults, disk: false, lock: false };
      await backend.databaseDown!(on);
    }
  }

  /** The end of a key's period that starts at `start`. */
  const periodEnd = (reset: LimitReset | null, start: number) => (reset === null || start === 0 ? Number.MAX_SAFE_INTEGER : nextReset(reset, start * 1000)!);

  /** The checks that hold at every committed state. */
  async function checkStep(): Promise<Snapshot | null> {
    // Nothing can be read while the database is stopped.
    if (faults.down) return null;
    // Settles that resolved before the snapshot was taken: a store read over the network lets
    // request tasks run (and more settles resolve) while the snapshot is on its way.
    const resolvedBefore = [...requests.values()].filter((r) => r.outcome === "charged").map((r) => [r.id, r.charged] as const);
    const journaledBefore = (await backend.journaled?.()) ?? new Set<string>();
    const snap = await backend.snapshot(lastEntryId);
    for (const e of snap.newEntries) {
      const before = seenBalance.get(e.account_id)!;
      if (e.balance_after !== before + e.amount) fail(`entry ${e.id}: balance_after ${e.balance_after} ≠ ${before} + ${e.amount}`);
      seenBalance.set(e.account_id, e.balance_after);
      lastEntryId = Math.max(lastEntryId, e.id);
      if (e.kind !== "charge") continue;
      const id = e.request_id!;
      const charge = -e.amount;
      if (chargesSeen.has(id)) fail(`${id} charged twice`);
      chargesSeen.set(id, charge);
      const r = requests.get(id);
      if (!r) fail(`a charge for an unknown request ${id}`);
      if (r!.hold === null || charge > r!.hold) fail(`${id} charged ${charge} over its hold ${r!.hold}`);
      if ((e.key_id ?? null) !== (r!.key?.id ?? null)) fail(`${id}'s charge counts against key ${e.key_id}, the request used ${r!.key?.id ?? "none"}`);
      if (e.key_id !== null) keyCharges.get(e.key_id)!.push({ at: e.counted_at!, amount: charge });
      if (r!.outcome === "not charged" || r!.outcome === "refused") fail(`${id} was charged after it ${r!.outcome === "refused" ? "was refused" : "failed"}`);
      // The cache's parts are parts of the prompt, and the entry records exactly the model's figures.
      if (e.cached_tokens + e.cache_write_tokens > e.input_tokens) fail(`${id} records ${e.cached_tokens} read + ${e.cache_write_tokens} written of a ${e.input_tokens}-token prompt`);
      if (e.cached_tokens + e.cache_write_tokens > 0) report.cacheCharges++;
      const seen = { input_tokens: e.input_tokens, cached_tokens: e.cached_tokens, cache_write_tokens: e.cache_write_tokens, output_tokens: e.output_tokens, cache_saved: e.cache_saved };
      if (r!.recorded && JSON.stringify(seen) !== JSON.stringify(r!.recorded)) fail(`${id} records ${JSON.stringify(seen)}, expected ${JSON.stringify(r!.recorded)}`);
    }
    for (const a of snap.accounts) {
      if (a.balance < 0 || a.reserved < 0 || a.leased < 0) fail(`${a.id}: balance ${a.balance}, reserved ${a.reserved}, leased ${a.leased}`);
      if (a.balance < a.reserved + a.leased) fail(`${a.id}: reserved ${a.reserved} + leased ${a.leased} above balance ${a.balance}`);
      const pending = snap.pendingByAccount.get(a.id) ?? 0;
      if (a.reserved !== pending) fail(`${a.id}: reserved ${a.reserved} ≠ Σ pending direct holds ${pending}`);
      if (a.balance !== seenBalance.get(a.id)) fail(`${a.id}: balance ${a.balance} ≠ Σ entries ${seenBalance.get(a.id)}`);
      if (!leased) {
        const held = ledgers.reduce((s, l) => s + l.held(a.id), 0);
        if (held > a.balance - a.reserved) fail(`${a.id}: holds in memory ${held} above the available balance ${a.balance - a.reserved}`);
      }
    }
    if (leased) {
      // Each instance's holds fit its lease less what it charged (one instant: all in its memory).
      for (let i = 0; i < n; i++) {
        const m = backend.leaseMirror!(i);
        if (!m) continue;
        for (const [id, mirror] of m.leases.accounts) {
          const held = ledgers[i]!.held(id);
          if (held + mirror.spent > mirror.leased) fail(`instance ${i}: ${id} holds ${held} + charged ${mirror.spent} above its lease ${mirror.leased}`);
        }
      }
    }
    for (const k of snap.keys) {
      if (k.reserved !== (snap.pendingByKey.get(k.id) ?? 0)) fail(`key ${k.id}: reserved ${k.reserved} ≠ Σ its pending direct holds ${snap.pendingByKey.get(k.id) ?? 0}`);
      const end = periodEnd(k.limit_reset, k.period_start);
      const inPeriod = (keyCharges.get(k.id) ?? []).filter((c) => c.at >= k.period_start && c.at < end).reduce((s, c) => s + c.amount, 0);
      if (k.period_spent !== inPeriod) fail(`key ${k.id}: period_spent ${k.period_spent} ≠ Σ charges counted in its period ${k.period_start} (${inPeriod})`);
      const limit = keyById.get(k.id)?.limit ?? null;
      if (limit === null) continue;
      // What is held (or leased) may belong to a newer period than the stored one once a clock has
      // passed into it: the stored period's figure is then no bound on it (a new period starts at 0).
      if (ledgers.some((_, i) => periodOf(k.limit_reset, periodStarts(clockOf(i))) > k.period_start)) continue;
      const base = keyBase.get(k.id);
      const ceiling = Math.max(limit, base && base.period === k.period_start ? base.spent : 0);
      const held = leased ? 0 : ledgers.reduce((s, l) => s + l.heldByKey(k.id), 0);
      if (k.period_spent + k.reserved + k.leased + held > ceiling) {
        fail(`key ${k.id} (${k.limit_reset}, period ${k.period_start}): spent ${k.period_spent} + reserved ${k.reserved} + leased ${k.leased} + held ${held} above its limit ${ceiling}; charges ${JSON.stringify((keyCharges.get(k.id) ?? []).slice(-12))}, base ${JSON.stringify(base)}, clocks ${ledgers.map((_, i) => Math.floor(clockOf(i) / 1000)).join(",")}`);
      }
    }
    for (const [id, charged] of resolvedBefore) {
      if (chargesSeen.get(id) !== charged && !journaledBefore.has(id)) {
        fail(`${id}: settle resolved with ${charged} but the store has ${chargesSeen.get(id) ?? "no charge"} and no journal holds it`);
      }
    }
    return snap;
  }

  /** The ledgers' expiry sweeps; once a store wrote them, no hold past the expiry may be open. */
  async function sweep(): Promise<void> {
    const quiet = () => !faults.disk && !faults.lock && !faults.fsync && !faults.down && ledgers.every((l) => !l.storeUnavailable);
    const healthy = quiet();
    const cut = ledgers.map((_, i) => Math.floor(clockOf(i) / 1000) - HOLD_EXPIRY_S);
    // The holds granted (their reserve resolved) that are past the expiry as the sweep starts.
    const due = [...requests.values()].filter((r) => r.hold !== null && !r.done && r.gen === gens[r.inst] && r.datedAt < cut[r.inst]!);
    const sweeping = [...ledgers];
    let voided = 0;
    for (const l of sweeping) voided += await l.expireHolds();
    if (sweeping.some((l, i) => l !== ledgers[i])) return;
    report.expired += voided;
    const snap = await checkStep();
    if (!snap) return;
    // Open after the sweep: still booked in memory (and not being charged), or a direct hold still pending.
    const left = due.filter((r) => (r.holdObj?.status === "open" && ledgers[r.inst]!.book.has(r.id)) || snap.pendingIds.has(r.id));
    if (healthy && quiet() && left.length > 0) {
      fail(`${left[0]!.id}, dated ${left[0]!.datedAt}, is still held after a sweep (expiry ${HOLD_EXPIRY_S} s)`);
    }
  }

  /** A key's limit_reset changes (at a quiet point): what it spent in the new current period carries over. */
  async function changeReset(): Promise<void> {
    const limited = [...keyById.values()].filter((k) => k.limit !== null);
    const k = pick(limited);
    const choices: (LimitReset | null)[] = [null, "daily", "weekly", "monthly"];
    const reset = pick(choices.filter((c) => c !== k.reset));
    // The store starts the new period by its own clock (the key records read the wall clock), and
    // counts in it every charge of the key counted since that start: the model does the same.
    const start = periodOf(reset, periodStarts(Date.now()));
    const spent = (keyCharges.get(k.id) ?? []).filter((c) => c.at >= start).reduce((s, c) => s + c.amount, 0);
    keyBase.set(k.id, { period: start, spent });
    await backend.setReset(k.id, reset);
    k.reset = reset;
    report.resetChanges++;
    const snap = await checkStep();
    if (!snap) return;
    const stored = snap.keys.find((x) => x.id === k.id)!;
    if (stored.period_start !== start || stored.period_spent !== spent) {
      fail(`key ${k.id}: a new limit_reset ${reset} left period ${stored.period_start} with ${stored.period_spent} spent, expected ${start} with ${spent}`);
    }
  }

  /** Ends every request, clears every fault, ships every journal; then nothing may be held. */
  async function quiesce(): Promise<void> {
    await setFault("down", false);
    await setFault("disk", false);
    await setFault("fsync", false);
    await setFault("lock", false);
    // Long streams run to their deadline and stuck requests past their expiry, with sweeps.
    while (liveCount() > 0) {
      clock += 30_000;
      if (random() < 0.1) await sweep();
      await tick();
    }
    // A store that failed for good writes nothing more: the server stops and is restarted.
    for (let i = 0; i < n; i++) if (backend.failedFatally?.(i)) await crashRestart(i);
    // A write that met the lock waits for its retry timer (milliseconds): give it real time.
    for (const ledger of ledgers) {
      for (let i = 0; i < 2_000 && ledger.queuedVoids() > 0; i++) {
        await ledger.retryVoidsNow();
        await new Promise((r) => setTimeout(r, 1));
      }
    }
    await backend.ship?.();
    const snap = (await checkStep())!;
    for (const [i, ledger] of ledgers.entries()) {
      if (ledger.queuedVoids() !== 0) fail(`instance ${i}: ${ledger.queuedVoids()} voids still queued once the store writes again`);
      if (ledger.pendingHolds() !== 0) fail(`instance ${i}: the ledger counts ${ledger.pendingHolds()} open holds after every request ended`);
      if (ledger.book.size !== 0) fail(`instance ${i}: ${ledger.book.size} holds still booked after every request ended`);
    }
    if (snap.pendingIds.size !== 0) fail(`direct holds still pending after every request ended: ${[...snap.pendingIds].slice(0, 5).join(", ")}`);
    // With nothing in flight, an instance's lease in memory is never more than the database's
    // (it takes a lease in only once granted, and gives one back before it is returned).
    for (let i = 0; i < n; i++) {
      const m = backend.leaseMirror?.(i);
      if (!m) continue;
      for (const [kind, table] of [["credit", m.leases.accounts], ["key", m.leases.keys]] as const) {
        for (const [id, mirror] of table) {
          const inDb = snap.leases.get(`${m.run}|${kind}|${id}`) ?? 0;
          if (mirror.spent !== 0) fail(`instance ${i}: ${mirror.spent} charged on its ${kind} lease of ${id} and not shipped after its journal was`);
          if (mirror.leased > inDb) fail(`instance ${i}: its ${kind} lease of ${id} is ${mirror.leased} in memory, ${inDb} in the database`);
        }
      }
    }
    for (const r of requests.values()) {
      if (!r.done) fail(`${r.id} never finished`);
      if (r.outcome === "charged" && chargesSeen.get(r.id) !== r.charged) fail(`${r.id}: reported charged ${r.charged}, store has ${chargesSeen.get(r.id)}`);
      if (r.outcome !== "charged" && r.outcome !== "unknown" && chargesSeen.has(r.id)) fail(`${r.id} (${r.outcome}) has a charge`);
    }
    // Finished requests need no more tracking: forget them (the store keeps the history).
    requests.clear();
  }

  /** Instance `i`'s process dies mid-flight and starts again over the same data. */
  async function crashRestart(i: number): Promise<void> {
    report.crashes++;
    gens[i]!++;
    ledgers[i]!.close();
    faults = { ...faults, disk: false, fsync: false, lock: false };
    await backend.crash(i);
    for (const r of requests.values()) if (r.inst === i && (!r.done || r.outcome === "pending")) r.outcome = "unknown";
    stores[i] = await backend.open(i);
    ledgers[i] = new Ledger(stores[i]!, log, ledgerOptions(i));
    // A new run ships what its previous run journaled, then gives back what that run left.
    await ledgers[i]!.releaseAbandoned().catch((e) => {
      if (!faults.down) fail(`instance ${i} could not start again: ${String((e as Error)?.message ?? e)}`);
    });
    await checkStep();
    // Old tasks still run against the dead process's ledger; they can no longer write.
    while (live[i]!.size > 0) await Promise.all([...live[i]!]);
    await checkStep();
  }

  const started = performance.now();
  for (step = 1; step <= opts.steps; step++) {
    const x = random();
    // A database restart is rare (it costs a second), but comes at least once a run.
    if (step === opts.steps >> 1 && report.databaseRestarts === 0) await setFault("down", true);
    if (x < 0.3) {
      if (liveCount() < 16) startRequest();
    } else if (x < 0.34) await setFault("disk", faults.disk ? random() < 0.5 : random() < 0.15);
    else if (x < 0.36) await setFault("fsync", faults.fsync ? random() < 0.5 : random() < 0.2);
    else if (x < 0.375) await setFault("lock", faults.lock ? random() < 0.6 : random() < 0.2);
    else if (x < 0.38) await setFault("down", faults.down ? random() < 0.7 : random() < 0.1);
    else if (x < 0.41) {
      // Credits outpace charges on the rich accounts; the first one stays poor, so 402s keep coming.
      const account = pick(accounts);
      const amount = random() < 0.7 ? (account === accounts[0] ? int(1, 50) : int(1, 3_000)) : -int(1, 300);
      if (!faults.down) {
        await pick(ledgers).adjust(account, amount, "checker").catch((e) => {
          if (!(e instanceof DomainError)) fail(`adjust failed with ${String(e)}`);
        });
      }
    } else if (x < 0.415) {
      if (!faults.down) await crashRestart(int(0, n - 1));
    } else if (x < 0.425) {
      // Time passes: an hour to two days, so daily, weekly and monthly limits roll over. Between
      // requests: a jump past every hold's expiry with requests in flight is no clock a server sees.
      await quiesce();
      clock += int(1, 48) * 3_600_000;
      report.clockMoves++;
      if (random() < 0.5) await changeReset();
    } else if (x < 0.44) await quiesce();
    else if (x < 0.46) await sweep();
    else if (x < 0.47 && n === 1) jitter = int(-3_000, 3_000);
    else for (let k = int(1, 4); k > 0; k--) await tick();
    // Time passes: a few seconds a step, so streams meet their deadline and stuck holds their expiry.
    clock += int(0, 30) * 1000;
    await tick();
    if (failure) throw failure;
    await checkStep();
    // A failed fsync stops the server (one log line); its supervisor starts it again.
    for (let i = 0; i < n; i++) if (backend.failedFatally?.(i)) await crashRestart(i);
  }
  step = opts.steps;
  await quiesce();
  const seconds = (performance.now() - started) / 1000;
  for (const l of ledgers) l.close();
  return { seed: opts.seed, steps: opts.steps, seconds, ...report };
}
