/**
 * A seeded randomized checker of the ledger (in the spirit of TigerBeetle's VOPR). It drives the
 * real domain ledger over a real store (backend.ts) with random, interleaved requests — reserve;
 * settle honestly, over-reporting, or after a client left with part of the output; fail without
 * settling; release in a finally as every route does — while it fills the disk, fails fsyncs,
 * holds the write lock from another connection, credits and debits accounts, and crashes and
 * restarts the process. A failed fsync is final (the server stops): the process is restarted
 * then, and a request whose settle failed with it has an unknown outcome (its charge was
 * committed and may be on disk, and it was never told "not billed"). On a simulated clock it
 * runs streams that end at their deadline (billed as delivered), requests stuck past their hold's
 * expiry, and the ledger's expiry sweep. After every step it compares the store's committed state with a small
 * reference model; at quiet points (faults cleared, every request ended) it checks the outcomes
 * request by request.
 *
 * Requests are made with per-key spend limits too (some keys without one, some resetting daily,
 * weekly or monthly on the ledger's clock, which the checker moves forward by hours at random).
 *
 * Checked after every step:
 *   balance ≥ 0, reserved ≥ 0, balance ≥ reserved; reserved = Σ pending holds (per account);
 *   per key: reserved = Σ its pending holds; a key's charges in a period never exceed its limit;
 *   its period_spent = Σ the charges of its holds of its current period;
 *   every new entry's balance_after = the previous balance ± its amount, and the newest = balance;
 *   every charge ≤ its hold, on a posted hold, once per request; no charge for a failed request;
 *   a charge's prompt-cache reads and writes never add up to more than its prompt, and it records
 *   the prompt, reads, writes, output and cache saving the model expects (usage with and without
 *   cache counts, some above the prompt);
 *   a settle that resolved is in the store with exactly the charge the model expects;
 *   after a sweep the store wrote, no hold older than the expiry is pending; a stream ended at its
 *   deadline is charged as delivered (its hold never expires first: expiry ≥ deadline + margin);
 *   a request whose hold expired is refused its charge and never charged.
 * Checked at quiet points and after each restart:
 *   no hold pending; the ledger counts no open hold and no queued void; every request's outcome
 *   (charged exactly as reported / not charged) matches the model.
 */
import { DomainError } from "../../../src/errors";
import { Ledger } from "../../../src/billing/ledger";
import { Log } from "../../../src/log";
import type { Consumption } from "../../../src/billing/ledger-store";
import type { Hold } from "../../../src/billing/hold";
import type { CheckerKey, LedgerBackend, Snapshot } from "./backend";
import type { LimitReset } from "../../../src/billing/key-periods";

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The simulated bounds (seconds): SWITCHYARD_STREAM_MAX_SECONDS and SWITCHYARD_HOLD_EXPIRY_SECONDS. */
const STREAM_MAX_S = 900;
const HOLD_EXPIRY_S = 1200;

/**
 * Units per token: 2 per uncached prompt token, 1 per prompt token read from the cache, 3 per one
 * written to it (dearer than input, as some labs price writes), 3 per output token. Reads and
 * writes are parts of the prompt, cut to it (reads first), as billing/prices.ts prices them.
 */
function parts(u: Consumption): { input: number; read: number; written: number } {
  const input = u.inputTokens ?? 0;
  const read = Math.min(u.cachedTokens ?? 0, input);
  return { input, read, written: Math.min(u.cacheWriteTokens ?? 0, input - read) };
}
const price = (u: Consumption) => {
  const { input, read, written } = parts(u);
  return 2 * (input - read - written) + read + 3 * written + 3 * (u.outputTokens ?? 0);
};

/** The figures a charge entry records. */
interface Recorded {
  input_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cache_saved: number;
}

function recordedOf(c: Consumption): Recorded {
  const { input, read, written } = parts(c);
  const saved = read + written === 0 ? 0 : price({ inputTokens: input, outputTokens: c.outputTokens }) - price(c);
  return { input_tokens: input, cached_tokens: read, cache_write_tokens: written, output_tokens: c.outputTokens ?? 0, cache_saved: saved };
}

/**
 * What the ledger must charge and record for `usage` on a hold of `budget`: the model's own
 * arithmetic. Over the hold, the prompt and the output are cut to the budget, and the cache's
 * parts to the prompt they are part of.
 */
function expectedCharge(budget: Consumption, usage: Consumption): { charge: number; recorded: Recorded } {
  const hold = price(budget);
  const reported = price(usage);
  if (reported <= hold) return { charge: reported, recorded: recordedOf(usage) };
  const clamped: Consumption = {
    inputTokens: Math.min(usage.inputTokens ?? 0, budget.inputTokens ?? 0),
    outputTokens: Math.min(usage.outputTokens ?? 0, budget.outputTokens ?? 0),
    cachedTokens: usage.cachedTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
  };
  return { charge: Math.min(price(clamped), hold), recorded: recordedOf(clamped) };
}

type Outcome = "pending" | "refused" | "charged" | "not charged" | "unknown";

interface RequestModel {
  id: string;
  account: string;
  key: CheckerKey | null;
  /** Process generation it ran in: a crash makes every unfinished request's outcome unknown. */
  gen: number;
  outcome: Outcome;
  /** The charge a resolved settle reported. */
  charged: number | null;
  /** What its charge entry must record, once it settles. */
  recorded: Recorded | null;
  hold: number | null;
  done: boolean;
  /** When its hold was dated (simulated Unix seconds, as the reserve was sent). */
  datedAt: number;
}

export interface CheckerOptions {
  seed: number;
  steps: number;
  accounts?: number;
}

export interface CheckerReport {
  seed: number;
  steps: number;
  seconds: number;
  requests: number;
  charged: number;
  /** Holds released without a charge (failed requests, clients gone, charges that could not be written). */
  notCharged: number;
  refusedCredits: number;
  /** Refused 402 because the key's spend limit had too little left in its period. */
  refusedKeyLimit: number;
  refusedUnavailable: number;
  /** Times the ledger's clock was moved forward (limit periods roll over). */
  clockMoves: number;
  crashes: number;
  faults: number;
  /** Streams ended at their deadline (charged as delivered). */
  deadlines: number;
  /** Holds the expiry sweep voided, and requests that then found their hold expired. */
  expired: number;
  expiredRefused: number;
  /** Charges that recorded prompt tokens read from or written to the cache. */
  cacheCharges: number;
}

class CheckFailed extends Error {}

export async function runLedgerChecker(backend: LedgerBackend, opts: CheckerOptions): Promise<CheckerReport> {
  const random = rng(opts.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const log = new Log("silent");

  // The simulated clock (ms): each step moves it on a few seconds; holds are dated and expired by
  // it, and key limit periods read from it (now and then it jumps hours, so periods roll over).
  let clock = Date.UTC(2026, 0, 1) + int(0, 400) * 3_600_000;
  const nowS = () => Math.floor(clock / 1000);
  // Refusals after a failure last 2 ms here, not 500: the checker runs thousands of steps a second.
  const ledgerOptions = { probeIntervalMs: 2, holdExpirySeconds: HOLD_EXPIRY_S, now: () => clock };

  let store = await backend.open();
  let ledger = new Ledger(store, log, ledgerOptions);
  let gen = 0;
  let step = 0;
  const report = { cacheCharges: 0, requests: 0, charged: 0, notCharged: 0, refusedCredits: 0, refusedKeyLimit: 0, refusedUnavailable: 0, clockMoves: 0, crashes: 0, faults: 0, deadlines: 0, expired: 0, expiredRefused: 0 };
  /** The first failure, also when a request task found it (it surfaces at the next step). */
  let failure: CheckFailed | null = null;
  const fail = (what: string): never => {
    failure ??= new CheckFailed(`ledger checker, seed ${opts.seed}, step ${step}: ${what}`);
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
  const live = new Set<Promise<void>>();
  let faults = { disk: false, fsync: false, lock: false };

  for (let i = 0; i < (opts.accounts ?? 3); i++) {
    const id = `acct_${i}`;
    // Some accounts run dry (402s happen), most can pay for a few dozen holds at a time.
    await ledger.openAccount({ id, name: id, createdAt: 0 }, i === 0 ? int(500, 2_000) : int(10_000, 40_000), "seed");
    accounts.push(id);
    seenBalance.set(id, 0);
  }

  // Keys: per account one without a limit and two with one (never resetting, or on a period).
  const keysOf = new Map<string, CheckerKey[]>();
  const keyById = new Map<string, CheckerKey>();
  /** Σ charges seen per key and hold period ("key@period"). */
  const keyPeriodCharges = new Map<string, number>();
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
    }
    keysOf.set(account, list);
  }

  const tick = () => new Promise<void>((r) => setImmediate(r));

  /** One request as a route runs it: reserve, work, settle or not, release in finally. */
  async function request(): Promise<void> {
    const myGen = gen;
    const myLedger = ledger;
    const account = pick(accounts);
    // Most requests come with a key (as over HTTP); some without, as the ledger allows.
    const key = random() < 0.85 ? pick(keysOf.get(account)!) : null;
    const r: RequestModel = { id: `req_${opts.seed}_${report.requests++}`, account, key, gen: myGen, outcome: "pending", charged: null, recorded: null, hold: null, done: false, datedAt: nowS() };
    requests.set(r.id, r);
    // Every prompt token held at the dearest input price (a cache write's), as chatBudget holds it.
    const inputBound = int(1, 60);
    const budget: Consumption = { inputTokens: inputBound, cacheWriteTokens: inputBound, outputTokens: int(1, 120) };
    let hold: Hold;
    // Its hold is dated at most this late (the ledger dates it as the reserve is sent).
    const started = nowS();
    try {
      hold = await myLedger.reserve({
        requestId: r.id, accountId: r.account, endpoint: "/v1/chat/completions", model: "m", budget, price,
        ...(r.key ? { key: { id: r.key.id, limitReset: r.key.reset } } : {}),
      });
    } catch (e) {
      if (e instanceof DomainError && e.code === "key_limit_exceeded" && (!r.key || r.key.limit === null)) fail(`${r.id} refused for a key limit its key does not have`);
      if (!(e instanceof DomainError) || !["insufficient_credits", "key_limit_exceeded", "service_unavailable"].includes(e.code)) {
        if (myGen === gen) fail(`reserve of ${r.id} failed with ${e instanceof DomainError ? e.code : String(e)}`);
      }
      r.outcome = myGen === gen ? "refused" : "unknown";
      if (r.outcome === "refused") {
        if ((e as DomainError).code === "insufficient_credits") report.refusedCredits++;
        else if ((e as DomainError).code === "key_limit_exceeded") report.refusedKeyLimit++;
        else report.refusedUnavailable++;
      }
      r.done = true;
      return;
    }
    r.hold = hold.amount;
    if (hold.amount !== price(budget)) fail(`hold of ${r.id} is ${hold.amount}, budget prices at ${price(budget)}`);
    for (let k = int(0, 3); k > 0; k--) await tick();
    let kind = pick(["honest", "honest", "over", "partial", "failed", "gone", "honest", "over", "partial", "failed", "gone", "stream", "stuck"] as const);
    let settled = false;
    try {
      if (kind === "stream") {
        // A long stream: it ends by itself now and then, else at its deadline, billed as delivered.
        const natural = started + int(60, 2 * STREAM_MAX_S);
        while (nowS() - started < STREAM_MAX_S && nowS() < natural && myGen === gen) await tick();
        if (nowS() - started >= STREAM_MAX_S) {
          kind = "partial";
          report.deadlines++;
        } else kind = "honest";
      } else if (kind === "stuck") {
        // A request stuck past its hold's expiry (a bug, a hung engine): the sweep must free its hold.
        const until = started + HOLD_EXPIRY_S + int(0, 600);
        while (nowS() < until && myGen === gen) await tick();
        kind = "honest";
      }
      if (kind === "failed" || kind === "gone") return;
      const usage: Consumption =
        kind === "honest" ? { inputTokens: int(0, budget.inputTokens!), outputTokens: int(0, budget.outputTokens!) }
        : kind === "over" ? { inputTokens: int(0, 10 * budget.inputTokens!), outputTokens: int(budget.outputTokens!, 1_000_000) }
        : { inputTokens: budget.inputTokens!, outputTokens: int(1, budget.outputTokens!) };
      // Most usage says what of the prompt the cache read and wrote; an over-reporting upstream, and
      // now and then one whose totals are honest, says more than the prompt.
      const hostile = kind === "over" || random() < 0.15;
      const prompt = usage.inputTokens!;
      if (random() < 0.6) usage.cachedTokens = int(0, hostile ? 2 * prompt + 1 : prompt);
      if (random() < 0.4) usage.cacheWriteTokens = int(0, hostile ? 2 * prompt + 1 : prompt - Math.min(usage.cachedTokens ?? 0, prompt));
      const { charge: expected, recorded } = expectedCharge(budget, usage);
      r.recorded = recorded;
      const attempts = random() < 0.1 ? [hold.settle({ ...usage, serviceTier: "default" }), hold.settle({ ...usage, serviceTier: "default" })] : [hold.settle({ ...usage, serviceTier: "default" })];
      const results = await Promise.allSettled(attempts);
      const ok = results.filter((x) => x.status === "fulfilled").map((x) => (x as PromiseFulfilledResult<{ charged: number }>).value.charged);
      if (ok.length > 0) {
        if (ok.length !== results.length) fail(`repeated settles of ${r.id} disagree`);
        if (ok.some((c) => c !== expected)) fail(`${r.id} charged ${ok.join(",")}, expected ${expected} (budget ${JSON.stringify(budget)}, usage ${JSON.stringify(usage)})`);
        if (expected > hold.amount) fail(`${r.id}: the model expects more than the hold`);
        settled = true;
        r.charged = expected;
      } else {
        // The only excuse for not charging is a store that cannot write (or a process that died),
        // or a hold the sweep expired: never a stream that ended at its deadline.
        const e = (results[0] as PromiseRejectedResult).reason;
        // A request older than the expiry (stuck, or whose settle waited out a long fault) may
        // find its hold expired and be refused in any way; that it is then never charged is checked
        // at every step. Never one younger than the expiry: no hold expires early.
        if (nowS() - started > HOLD_EXPIRY_S) {
          report.expiredRefused++;
        } else if (myGen === gen && !(e instanceof DomainError && e.code === "service_unavailable")) {
          fail(`settle of ${r.id} (${kind}, ${nowS() - started} s old) rejected with ${e instanceof DomainError ? `${e.code}: ${(e as { detail?: string }).detail ?? e.message}` : String(e)}`);
        }
      }
    } finally {
      const voided = await hold.release();
      if (settled && voided) fail(`release of the charged ${r.id} said it voided`);
      if (myGen === gen && !settled && backend.failedFatally?.()) r.outcome = "unknown";
      else if (myGen === gen) {
        r.outcome = settled ? "charged" : "not charged";
        if (settled) report.charged++;
        else report.notCharged++;
      } else r.outcome = settled ? "charged" : "unknown";
      r.done = true;
    }
  }

  function startRequest() {
    const p: Promise<void> = request().catch((e) => {
      if (e instanceof CheckFailed) throw e;
      fail(`a request task threw: ${String((e as Error)?.stack ?? e)}`);
    });
    live.add(p);
    p.then(
      () => live.delete(p),
      () => live.delete(p),
    );
  }

  async function setFault(kind: keyof typeof faults, on: boolean) {
    if (faults[kind] === on) return;
    faults = { ...faults, [kind]: on };
    report.faults += on ? 1 : 0;
    if (kind === "disk") await backend.diskFull(on);
    else if (kind === "fsync") await backend.fsyncFails(on);
    else await backend.lock(on);
  }

  /** The checks that hold at every committed state. */
  async function checkStep(): Promise<Snapshot> {
    // Settles that resolved before the snapshot was taken: a store read over the network lets
    // request tasks run (and more settles resolve) while the snapshot is on its way.
    const resolvedBefore = [...requests.values()].filter((r) => r.outcome === "charged").map((r) => [r.id, r.charged] as const);
    const snap = await backend.snapshot(lastEntryId);
    for (const e of snap.newEntries) {
      const before = seenBalance.get(e.account_id)!;
      if (e.balance_after !== before + e.amount) fail(`entry ${e.id}: balance_after ${e.balance_after} ≠ ${before} + ${e.amount}`);
      seenBalance.set(e.account_id, e.balance_after);
      lastEntryId = e.id;
      if (e.kind !== "charge") continue;
      const id = e.request_id!;
      const charge = -e.amount;
      if (chargesSeen.has(id)) fail(`${id} charged twice`);
      chargesSeen.set(id, charge);
      if (e.hold_amount === null || charge > e.hold_amount) fail(`${id} charged ${charge} over its hold ${e.hold_amount}`);
      if (e.hold_state !== "posted") fail(`${id} charged while its hold is ${e.hold_state}`);
      const r = requests.get(id);
      if (!r) fail(`a charge for an unknown request ${id}`);
      if ((e.hold_key_id ?? null) !== (r!.key?.id ?? null)) fail(`${id}'s hold has key ${e.hold_key_id}, the request used ${r!.key?.id ?? "none"}`);
      if (e.hold_key_id !== null) {
        const k = keyById.get(e.hold_key_id)!;
        const slot = `${k.id}@${e.hold_period}`;
        const sum = (keyPeriodCharges.get(slot) ?? 0) + charge;
        keyPeriodCharges.set(slot, sum);
        // The invariant: a key's charges in a period never exceed its limit.
        if (k.limit !== null && sum > k.limit) fail(`key ${k.id} charged ${sum} in period ${e.hold_period}, above its limit ${k.limit}`);
      }
      if (r!.outcome === "not charged" || r!.outcome === "refused") fail(`${id} was charged after it ${r!.outcome === "refused" ? "was refused" : "failed"}`);
      // The cache's parts are parts of the prompt, and the entry records exactly the model's figures.
      if (e.cached_tokens + e.cache_write_tokens > e.input_tokens) fail(`${id} records ${e.cached_tokens} read + ${e.cache_write_tokens} written of a ${e.input_tokens}-token prompt`);
      if (e.cached_tokens + e.cache_write_tokens > 0) report.cacheCharges++;
      const seen = { input_tokens: e.input_tokens, cached_tokens: e.cached_tokens, cache_write_tokens: e.cache_write_tokens, output_tokens: e.output_tokens, cache_saved: e.cache_saved };
      if (r!.recorded && JSON.stringify(seen) !== JSON.stringify(r!.recorded)) fail(`${id} records ${JSON.stringify(seen)}, expected ${JSON.stringify(r!.recorded)}`);
    }
    for (const a of snap.accounts) {
      if (a.balance < 0 || a.reserved < 0) fail(`${a.id}: balance ${a.balance}, reserved ${a.reserved}`);
      if (a.balance < a.reserved) fail(`${a.id}: reserved ${a.reserved} above balance ${a.balance}`);
      const pending = snap.pendingByAccount.get(a.id) ?? 0;
      if (a.reserved !== pending) fail(`${a.id}: reserved ${a.reserved} ≠ Σ pending holds ${pending}`);
      if (a.balance !== seenBalance.get(a.id)) fail(`${a.id}: balance ${a.balance} ≠ Σ entries ${seenBalance.get(a.id)}`);
    }
    for (const k of snap.keys) {
      if (k.reserved !== (snap.pendingByKey.get(k.id) ?? 0)) fail(`key ${k.id}: reserved ${k.reserved} ≠ Σ its pending holds ${snap.pendingByKey.get(k.id) ?? 0}`);
      const inPeriod = keyPeriodCharges.get(`${k.id}@${k.period_start}`) ?? 0;
      if (k.period_spent !== inPeriod) fail(`key ${k.id}: period_spent ${k.period_spent} ≠ Σ charges of its period ${k.period_start} (${inPeriod})`);
      const limit = keyById.get(k.id)?.limit ?? null;
      if (limit !== null && k.period_spent + k.reserved > limit) fail(`key ${k.id}: spent ${k.period_spent} + reserved ${k.reserved} above its limit ${limit}`);
    }
    for (const [id, charged] of resolvedBefore) {
      if (chargesSeen.get(id) !== charged) fail(`${id}: settle resolved with ${charged} but the store has ${chargesSeen.get(id) ?? "no charge"}`);
    }
    return snap;
  }

  /** The ledger's expiry sweep; once the store wrote it, no hold past the expiry may be pending. */
  async function sweep(): Promise<void> {
    const before = nowS();
    const quiet = () => !faults.disk && !faults.lock && !faults.fsync && !ledger.storeUnavailable;
    const healthy = quiet();
    // The holds granted (their reserve resolved) that are past the expiry as the sweep starts.
    const due = [...requests.values()].filter((r) => r.hold !== null && !r.done && r.gen === gen && r.datedAt < before - HOLD_EXPIRY_S);
    const sweeping = ledger;
    const voided = await sweeping.expireHolds();
    if (sweeping !== ledger) return;
    report.expired += voided;
    const snap = await checkStep();
    const left = due.filter((r) => snap.holdStates.has(r.id));
    if (healthy && quiet() && left.length > 0) {
      fail(`${left[0]!.id}, dated ${left[0]!.datedAt}, is still pending after a sweep at ${before} (expiry ${HOLD_EXPIRY_S} s)`);
    }
  }

  /** Ends every request, clears every fault, waits for queued voids; then nothing may be held. */
  async function quiesce(): Promise<void> {
    await setFault("disk", false);
    await setFault("fsync", false);
    await setFault("lock", false);
    // Long streams run to their deadline and stuck requests past their expiry, with sweeps.
    while (live.size > 0) {
      clock += 30_000;
      if (random() < 0.1) await sweep();
      await tick();
    }
    // A store that failed for good writes nothing more: the server stops and is restarted.
    if (backend.failedFatally?.()) await crashRestart();
    // A write that met the lock waits for its retry timer (milliseconds): give it real time.
    for (let i = 0; i < 2_000 && ledger.queuedVoids() > 0; i++) {
      await ledger.retryVoidsNow();
      await new Promise((r) => setTimeout(r, 1));
    }
    const snap = await checkStep();
    if (ledger.queuedVoids() !== 0) fail(`${ledger.queuedVoids()} voids still queued once the store writes again`);
    if (snap.pendingCount !== 0) fail(`holds still pending after every request ended: ${[...snap.holdStates.keys()].slice(0, 5).join(", ")}`);
    if (ledger.pendingHolds() !== 0) fail(`the ledger counts ${ledger.pendingHolds()} open holds after every request ended`);
    for (const r of requests.values()) {
      if (!r.done) fail(`${r.id} never finished`);
      if (r.outcome === "charged" && chargesSeen.get(r.id) !== r.charged) fail(`${r.id}: reported charged ${r.charged}, store has ${chargesSeen.get(r.id)}`);
      if (r.outcome !== "charged" && r.outcome !== "unknown" && chargesSeen.has(r.id)) fail(`${r.id} (${r.outcome}) has a charge`);
    }
    // Finished requests need no more tracking: forget them (the store keeps the history).
    requests.clear();
  }

  /** The process dies mid-flight and starts again over the same data. */
  async function crashRestart(): Promise<void> {
    report.crashes++;
    gen++;
    ledger.close();
    faults = { disk: false, fsync: false, lock: false };
    await backend.crash();
    for (const r of requests.values()) if (!r.done || r.outcome === "pending") r.outcome = "unknown";
    store = await backend.open();
    ledger = new Ledger(store, log, ledgerOptions);
    await ledger.releaseAbandoned();
    const snap = await checkStep();
    if (snap.pendingCount !== 0) fail(`holds still pending after a restart`);
    // Old tasks still run against the dead process's ledger; they can no longer write.
    while (live.size > 0) await Promise.all([...live]);
    await checkStep();
  }

  const started = performance.now();
  for (step = 1; step <= opts.steps; step++) {
    const x = random();
    if (x < 0.3) {
      if (live.size < 16) startRequest();
    } else if (x < 0.34) await setFault("disk", faults.disk ? random() < 0.5 : random() < 0.15);
    else if (x < 0.36) await setFault("fsync", faults.fsync ? random() < 0.5 : random() < 0.2);
    else if (x < 0.375) await setFault("lock", faults.lock ? random() < 0.6 : random() < 0.2);
    else if (x < 0.41) {
      // Credits outpace charges on the rich accounts; the first one stays poor, so 402s keep coming.
      const account = pick(accounts);
      const amount = random() < 0.7 ? (account === accounts[0] ? int(1, 50) : int(1, 3_000)) : -int(1, 300);
      await ledger.adjust(account, amount, "checker").catch((e) => {
        if (!(e instanceof DomainError)) fail(`adjust failed with ${String(e)}`);
      });
    } else if (x < 0.415) await crashRestart();
    else if (x < 0.425) {
      // Time passes: an hour to two days, so daily, weekly and monthly limits roll over. Between
      // requests: a jump past every hold's expiry with requests in flight is no clock a server sees.
      await quiesce();
      clock += int(1, 48) * 3_600_000;
      report.clockMoves++;
    }
    else if (x < 0.44) await quiesce();
    else if (x < 0.46) await sweep();
    else for (let k = int(1, 4); k > 0; k--) await tick();
    // Time passes: a few seconds a step, so streams meet their deadline and stuck holds their expiry.
    clock += int(0, 30) * 1000;
    await tick();
    if (failure) throw failure;
    await checkStep();
    // A failed fsync stops the server (one log line); its supervisor starts it again.
    if (backend.failedFatally?.()) await crashRestart();
  }
  step = opts.steps;
  await quiesce();
  const seconds = (performance.now() - started) / 1000;
  ledger.close();
  return { seed: opts.seed, steps: opts.steps, seconds, ...report };
}
