/**
 * One request of the ledger checker (sim.ts), as a route runs it: reserve, work, settle or not,
 * release in a finally. It records what it did in the model (model.ts), which the checker's steps
 * compare with the store; the run's state it uses comes in a context object.
 */
import { DomainError } from "../../../src/errors";
import type { Ledger } from "../../../src/billing/ledger";
import type { Consumption } from "../../../src/billing/ledger-store";
import type { Hold } from "../../../src/billing/hold";
import type { CheckerKey, LedgerBackend } from "./backend";
import { expectedCharge, HOLD_EXPIRY_S, price, STREAM_MAX_S, type CheckerReport, type RequestModel } from "./model";

/** What a request task reads and writes of the run (sim.ts keeps it). */
export interface RequestContext {
  seed: number;
  backend: LedgerBackend;
  random(): number;
  int(lo: number, hi: number): number;
  pick<T>(xs: readonly T[]): T;
  accounts: readonly string[];
  keysOf: ReadonlyMap<string, CheckerKey[]>;
  /** Each instance's process generation and ledger, as they are now (a crash replaces both). */
  gens: readonly number[];
  ledgers: readonly Ledger[];
  /** The model of every request of the run, by id; this request adds its own. */
  requests: Map<string, RequestModel>;
  report: Pick<CheckerReport, "requests" | "charged" | "notCharged" | "refusedCredits" | "refusedKeyLimit" | "refusedUnavailable" | "deadlines" | "expiredRefused">;
  /** Instance `i`'s clock (ms), and the simulated clock (Unix seconds). */
  clockOf(i: number): number;
  nowS(): number;
  tick(): Promise<void>;
  fail(what: string): never;
}

/** One request on instance `inst`: reserve, work, settle or not, release in finally. */
export async function runRequest(ctx: RequestContext, inst: number): Promise<void> {
  const { seed, backend, random, int, pick, accounts, keysOf, gens, ledgers, requests, report, clockOf, nowS, tick, fail } = ctx;
  const myGen = gens[inst]!;
  const myLedger = ledgers[inst]!;
  const current = () => gens[inst] === myGen;
  const account = pick(accounts);
  // Most requests come with a key (as over HTTP); some without, as the ledger allows.
  const key = random() < 0.85 ? pick(keysOf.get(account)!) : null;
  const r: RequestModel = {
    id: `req_${seed}_${report.requests++}`, account, key, gen: myGen, outcome: "pending", charged: null, recorded: null, hold: null, holdObj: null, inst, done: false,
    datedAt: Math.floor(clockOf(inst) / 1000),
  };
  requests.set(r.id, r);
  // Every prompt token held at the dearest input price (a cache write's), as chatBudget holds it.
  const inputBound = int(1, 60);
  const budget: Consumption = { inputTokens: inputBound, cacheWriteTokens: inputBound, outputTokens: int(1, 120) };
  let hold: Hold;
  const started = nowS();
  try {
    hold = await myLedger.reserve({
      requestId: r.id, accountId: r.account, endpoint: "/v1/chat/completions", model: "m", budget, price,
      ...(r.key ? { key: { id: r.key.id, limitReset: r.key.reset } } : {}),
    });
  } catch (e) {
    if (e instanceof DomainError && e.code === "key_limit_exceeded" && (!r.key || r.key.limit === null)) fail(`${r.id} refused for a key limit its key does not have`);
    if (!(e instanceof DomainError) || !["insufficient_credits", "key_limit_exceeded", "service_unavailable"].includes(e.code)) {
      if (current()) fail(`reserve of ${r.id} failed with ${e instanceof DomainError ? `${e.code}: ${(e as { detail?: string }).detail ?? e.message}` : String(e)}`);
    }
    r.outcome = current() ? "refused" : "unknown";
    if (r.outcome === "refused") {
      if ((e as DomainError).code === "insufficient_credits") report.refusedCredits++;
      else if ((e as DomainError).code === "key_limit_exceeded") report.refusedKeyLimit++;
      else report.refusedUnavailable++;
    }
    r.done = true;
    return;
  }
  r.hold = hold.amount;
  r.holdObj = hold;
  r.datedAt = hold.createdAt;
  if (hold.amount !== price(budget)) fail(`hold of ${r.id} is ${hold.amount}, budget prices at ${price(budget)}`);
  for (let k = int(0, 3); k > 0; k--) await tick();
  let kind = pick(["honest", "honest", "over", "partial", "failed", "gone", "honest", "over", "partial", "failed", "gone", "stream", "stuck"] as const);
  let settled = false;
  try {
    if (kind === "stream") {
      // A long stream: it ends by itself now and then, else at its deadline, billed as delivered.
      const natural = started + int(60, 2 * STREAM_MAX_S);
      while (nowS() - started < STREAM_MAX_S && nowS() < natural && current()) await tick();
      if (nowS() - started >= STREAM_MAX_S) {
        kind = "partial";
        report.deadlines++;
      } else kind = "honest";
    } else if (kind === "stuck") {
      // A request stuck past its hold's expiry (a bug, a hung engine): the sweep must free its hold.
      const until = started + HOLD_EXPIRY_S + int(0, 600);
      while (nowS() < until && current()) await tick();
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
      // at every step. Never one younger than the expiry (by more than the clocks' error): no hold expires early.
      if (nowS() - started > HOLD_EXPIRY_S - 10) {
        report.expiredRefused++;
      } else if (current() && !(e instanceof DomainError && e.code === "service_unavailable")) {
        fail(`settle of ${r.id} (${kind}, ${nowS() - started} s old) rejected with ${e instanceof DomainError ? `${e.code}: ${(e as { detail?: string }).detail ?? e.message}` : String(e)}`);
      }
    }
  } finally {
    const voided = await hold.release();
    if (settled && voided) fail(`release of the charged ${r.id} said it voided`);
    if (current() && !settled && backend.failedFatally?.(inst)) r.outcome = "unknown";
    else if (current()) {
      r.outcome = settled ? "charged" : "not charged";
      if (settled) report.charged++;
      else report.notCharged++;
    } else r.outcome = settled ? "charged" : "unknown";
    r.done = true;
  }
}
