/**
 * Per-account rate and concurrency limits shared by every instance on the database, exact across
 * instances, with the database off the request path (docs/scale-out.md, "Leases"): an instance
 * leases part of an account's concurrency (slots) and of its rate (requests taken from the
 * account's GCRA bucket, limit_state), and admits in memory while its leases last. Same semantics
 * as the in-memory AccountLimiter (limits/limiter.ts): burst of rpm, then one every 60/rpm s;
 * concurrency checked first; a refusal for concurrency consumes no rate. Every slot and every
 * request of rate comes from the one row per account, so instances together never admit more
 * than the limits allow.
 *
 *   admit           in memory when this instance's leases have a slot and a request of rate
 *                   left; otherwise one statement (switchyard_limits_take) leases more. Before a
 *                   refusal, the other instances are asked to give back what they lease and do not
 *                   use (NOTIFY switchyard_recall), and the lease is tried again within the recall
 *                   time: a request is refused only when the instances together cannot admit it.
 *   slot.release()  in memory. Slots unused for LEASE_IDLE_MS go back, and all at a clean stop;
 *                   a dead instance's come back with its holds (instances.ts). Rate leased and not
 *                   used goes back the same way (the bucket's arrival time moves back).
 *
 * A key's own rate is leased the same way from its bucket (key_rate_state).
 */
import type { AccountLimits, Admission, KeyAdmission, Limiter, RateStatus, Slot } from "../../limits/limiter";
import { rateStatus, retryAfterMsOf } from "../../limits/limiter";
import type { PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { instanceError } from "./instance-error";
import { LEASE_IDLE_MS, DEFAULT_RECALL_MS, IDLE_SWEEP_MS } from "./lease-grants";
import { decayRate, RATE_HALF_LIFE_MS, RECALL_COOLDOWN_MS } from "./credit-leases";
import { RECALL_CHANNEL } from "./changes";

/** A lease of rate: at most this share of a minute's requests is leased at once. */
const RATE_LEASE_SECONDS = 1;
/** A slot lease: what was in flight at once lately, and this many more. */
const SLOT_HEADROOM = 2;

/** A lease of requests of rate from one GCRA bucket: a key's, or (with slots) an account's. */
interface RateLease {
  /** Requests of rate leased and not used yet. */
  tokens: number;
  /** The bucket's arrival time and the database's clock as last seen, and this clock then. */
  tat: number;
  dbNow: number;
  seenAt: number;
  rpm: number;
  /** Requests admitted per second here, decaying. */
  rate: number;
  rateAt: number;
  lastUse: number;
  coolUntil: number;
}

interface AccountLease extends RateLease {
  /** Slots leased, and how many of them requests hold now; the most in flight at once lately. */
  slots: number;
  inFlight: number;
  peak: number;
}

interface TakeRow {
  refused: "rate" | "concurrency" | null;
  slots: number;
  tokens: number;
  tat: number;
  now_ms: number;
}

export interface PostgresLimiterOptions {
  /** How long an admission that does not fit waits for other instances' leases (ms). */
  recallMs?: number;
}

export class PostgresLimiter implements Limiter {
  private readonly accounts = new Map<string, AccountLease>();
  private readonly keys = new Map<string, RateLease>();
  private readonly asking = new Map<string, Promise<unknown>>();
  private idleTimer: ReturnType<typeof setInterval> | null = null;
  private readonly recallMs: number;

  constructor(
    private readonly db: PgDatabase,
    private readonly instance: InstanceIdentity,
    opts: PostgresLimiterOptions = {},
  ) {
    this.recallMs = opts.recallMs ?? DEFAULT_RECALL_MS;
  }

  /** Starts giving idle leases back (a serving instance). */
  start(): void {
    if (this.idleTimer) return;
    this.idleTimer = setInterval(() => void this.returnIdle(false), IDLE_SWEEP_MS);
    this.idleTimer.unref?.();
  }

  admit(accountId: string, limits: AccountLimits): Admission | Promise<Admission> {
    const st = this.account(accountId, limits.rateLimitRpm);
    if (fits(st, limits)) return this.admitted(st);
    return this.admitSlow(accountId, limits);
  }

  private admitted(st: AccountLease): Admission {
    st.inFlight++;
    used(st);
    st.peak = Math.max(st.peak, st.inFlight);
    return { ok: true, rate: this.status(st), slot: this.slot(st) };
  }

  private async admitSlow(accountId: string, limits: AccountLimits): Promise<Admission> {
    const deadline = Date.now() + this.recallMs;
    let recalled = false;
    let pause = 10;
    for (;;) {
      const st = this.account(accountId, limits.rateLimitRpm);
      // The account's whole concurrency is in flight here: no other instance can add to it.
      if (st.inFlight >= limits.concurrencyLimit) return { ok: false, reason: "concurrency", rate: this.status(st), retryAfterMs: 1000 };
      const under = this.asking.get(accountId);
      if (under) {
        await under.catch(() => {});
        if (fits(st, limits)) return this.admitted(st);
      }
      const wantSlots = st.inFlight < st.slots ? 0 : Math.max(1, Math.min(limits.concurrencyLimit, Date.now() < st.coolUntil ? 1 : st.peak + SLOT_HEADROOM) - (st.slots - st.inFlight));
      const wantTokens = st.tokens > 0 ? 0 : tokensToAsk(st, limits.rateLimitRpm);
      const row = await this.ask(accountId, this.take(accountId, limits, wantSlots, wantTokens));
      seen(st, row.tat, row.now_ms);
      if (row.refused === null) {
        st.slots += row.slots;
        st.tokens += row.tokens;
        if (fits(st, limits)) return this.admitted(st);
        continue;
      }
      if (!recalled) {
        recalled = true;
        await this.recall(`${row.refused === "concurrency" ? "slots" : "rate"}:${accountId}`);
      }
      if (Date.now() + pause > deadline) {
        const rate = this.status(st);
        if (row.refused === "concurrency") return { ok: false, reason: "concurrency", rate, retryAfterMs: 1000 };
        return { ok: false, reason: "rate", rate, retryAfterMs: retryAfterMsOf(row.tat, row.now_ms, limits.rateLimitRpm) };
      }
      await Bun.sleep(pause);
      pause = Math.min(pause * 2, 100);
    }
  }

  /** One request to the database per account or key at a time: others wait for its answer. */
  private async ask<T>(key: string, asked: Promise<T>): Promise<T> {
    this.asking.set(key, asked);
    try {
      return await asked;
    } catch (e) {
      throw instanceError(e, this.instance);
    } finally {
      if (this.asking.get(key) === asked) this.asking.delete(key);
    }
  }

  private async take(accountId: string, limits: AccountLimits, slots: number, tokens: number): Promise<TakeRow> {
    const [row] = (await this.db.run((sql) => sql`
      SELECT refused, slots, tokens, tat, now_ms FROM switchyard_limits_take(
        ${this.instance.id}, ${accountId}, ${limits.rateLimitRpm}, ${limits.concurrencyLimit}, ${slots}, ${tokens}, ${null}, ${null}, ${0})`,
      this.db.answerTimeoutMs)) as TakeRow[];
    return { ...row!, slots: Number(row!.slots), tokens: Number(row!.tokens), tat: Number(row!.tat), now_ms: Number(row!.now_ms) };
  }

  async peek(accountId: string, limits: AccountLimits): Promise<RateStatus> {
    const st = this.accounts.get(accountId);
    if (!st) return { limit: limits.rateLimitRpm, remaining: limits.rateLimitRpm, resetMs: 0 };
    return this.status(st);
  }

  admitKey(keyId: string, rpm: number): KeyAdmission | Promise<KeyAdmission> {
    const k = this.key(keyId, rpm);
    if (k.tokens > 0) return this.keyAdmitted(k);
    return this.admitKeySlow(keyId, rpm);
  }

  private keyAdmitted(k: RateLease): KeyAdmission {
    used(k);
    return { ok: true, rate: this.status(k) };
  }

  private async admitKeySlow(keyId: string, rpm: number): Promise<KeyAdmission> {
    const deadline = Date.now() + this.recallMs;
    let recalled = false;
    let pause = 10;
    for (;;) {
      const k = this.key(keyId, rpm);
      const under = this.asking.get(`key:${keyId}`);
      if (under) {
        await under.catch(() => {});
        if (k.tokens > 0) return this.keyAdmitted(k);
      }
      const want = tokensToAsk(k, rpm);
      const [row] = await this.ask(`key:${keyId}`, this.db.run((sql) => sql`SELECT tokens, tat, now_ms FROM switchyard_key_rate_take(${keyId}, ${rpm}, ${want})`, this.db.answerTimeoutMs) as Promise<{ tokens: number; tat: number; now_ms: number }[]>);
      seen(k, Number(row!.tat), Number(row!.now_ms));
      k.tokens += Number(row!.tokens);
      if (k.tokens > 0) return this.keyAdmitted(k);
      if (!recalled) {
        recalled = true;
        await this.recall(`key_rate:${keyId}`);
      }
      if (Date.now() + pause > deadline) return { ok: false, rate: this.status(k), retryAfterMs: retryAfterMsOf(k.tat, k.dbNow, rpm) };
      await Bun.sleep(pause);
      pause = Math.min(pause * 2, 100);
    }
  }

  async peekKey(keyId: string, rpm: number): Promise<RateStatus> {
    const k = this.keys.get(keyId);
    if (!k) return { limit: rpm, remaining: rpm, resetMs: 0 };
    return this.status(k);
  }

  /** Requests of the account in flight on this instance (each instance knows only its own). */
  inFlight(accountId: string): number {
    return this.accounts.get(accountId)?.inFlight ?? 0;
  }

  totalInFlight(): number {
    let n = 0;
    for (const st of this.accounts.values()) n += st.inFlight;
    return n;
  }

  /** Another instance could not admit: give back what this one leases of it and does not use. */
  async recalled(subject: string): Promise<void> {
    const at = subject.indexOf(":");
    const kind = subject.slice(0, at);
    const id = subject.slice(at + 1);
    const now = Date.now();
    if (kind === "slots" || kind === "rate") {
      const st = this.accounts.get(id);
      if (!st) return;
      st.coolUntil = now + RECALL_COOLDOWN_MS;
      await this.giveBack([{ id, st, slots: kind === "slots" ? st.slots - st.inFlight : 0, tokens: kind === "rate" ? st.tokens : 0 }], []);
    } else if (kind === "key_rate") {
      const k = this.keys.get(id);
      if (!k) return;
      k.coolUntil = now + RECALL_COOLDOWN_MS;
      await this.giveBack([], [{ id, k, tokens: k.tokens }]);
    }
  }

  /** Gives back what has not been used for LEASE_IDLE_MS (`all`: everything unused, at a clean stop). */
  private async returnIdle(all: boolean): Promise<void> {
    const now = Date.now();
    const accounts: { id: string; st: AccountLease; slots: number; tokens: number }[] = [];
    for (const [id, st] of this.accounts) {
      if (!all && now - st.lastUse < LEASE_IDLE_MS) continue;
      if (st.slots - st.inFlight > 0 || st.tokens > 0) accounts.push({ id, st, slots: st.slots - st.inFlight, tokens: st.tokens });
      else if (st.inFlight === 0) this.accounts.delete(id);
      st.peak = st.inFlight;
    }
    const keys: { id: string; k: RateLease; tokens: number }[] = [];
    for (const [id, k] of this.keys) {
      if (!all && now - k.lastUse < LEASE_IDLE_MS) continue;
      if (k.tokens > 0) keys.push({ id, k, tokens: k.tokens });
      else this.keys.delete(id);
    }
    if (accounts.length > 0 || keys.length > 0) await this.giveBack(accounts, keys).catch(() => {});
  }

  /** Gives slots and rate back; an answer lost counts as given back (the mirror stays on the safe side). */
  private async giveBack(accounts: { id: string; st: AccountLease; slots: number; tokens: number }[], keys: { id: string; k: RateLease; tokens: number }[]): Promise<void> {
    const slots = accounts.filter((a) => a.slots > 0).map((a) => ({ kind: "slots", subject: a.id, amount: a.slots }));
    const rate = [
      ...accounts.filter((a) => a.tokens > 0).map((a) => ({ key: false, subject: a.id, tokens: a.tokens, rpm: a.st.rpm })),
      ...keys.filter((k) => k.tokens > 0).map((k) => ({ key: true, subject: k.id, tokens: k.tokens, rpm: k.k.rpm })),
    ];
    for (const a of accounts) {
      a.st.slots -= a.slots;
      a.st.tokens -= a.tokens;
    }
    for (const k of keys) k.k.tokens -= k.tokens;
    if (slots.length > 0) {
      await this.db.run((sql) => sql`SELECT returned FROM switchyard_lease_return(${this.instance.id}, ${slots}::json)`);
    }
    if (rate.length > 0) {
      await this.db.run((sql) => sql`SELECT switchyard_rate_return(${rate}::json)`);
    }
  }

  private async recall(subject: string): Promise<void> {
    await this.db.run((sql) => sql`SELECT pg_notify(${RECALL_CHANNEL}, ${subject})`).catch(() => {});
  }

  /** Gives every lease back (a clean stop); the database being away must not hang the stop. */
  async flush(timeoutMs = 5000): Promise<void> {
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.idleTimer = null;
    // A timer that outlives the race would keep a CLI process alive for the whole timeout.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.returnIdle(true), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** This instance was released and registered again: its slot leases went back to their accounts. */
  released(): void {
    for (const st of this.accounts.values()) st.slots = 0;
  }

  private account(accountId: string, rpm: number): AccountLease {
    let st = this.accounts.get(accountId);
    if (!st) {
      const now = Date.now();
      this.accounts.set(accountId, (st = { slots: 0, inFlight: 0, tokens: 0, tat: 0, dbNow: now, seenAt: now, rpm, rate: 0, rateAt: now, peak: 0, lastUse: now, coolUntil: 0 }));
    }
    st.rpm = rpm;
    return st;
  }

  private key(keyId: string, rpm: number): RateLease {
    let k = this.keys.get(keyId);
    if (!k) {
      const now = Date.now();
      this.keys.set(keyId, (k = { tokens: 0, tat: 0, dbNow: now, seenAt: now, rpm, rate: 0, rateAt: now, lastUse: now, coolUntil: 0 }));
    }
    k.rpm = rpm;
    return k;
  }

  /** The rate headers: what the bucket has left (the database's figure, moved on by the time since) plus what is leased here. */
  private status(l: RateLease): RateStatus {
    const now = l.dbNow + (Date.now() - l.seenAt);
    const r = rateStatus(l.tat, now, l.rpm);
    return { ...r, remaining: Math.min(l.rpm, r.remaining + l.tokens) };
  }

  private slot(st: AccountLease): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        st.inFlight--;
        st.lastUse = Date.now();
      },
      get released() {
        return released;
      },
    };
  }
}

/** Whether this instance's leases admit a request now: a slot free within the limit and a request of rate. */
function fits(st: AccountLease, limits: AccountLimits): boolean {
  return st.inFlight < Math.min(st.slots, limits.concurrencyLimit) && st.tokens > 0;
}

/** A request admitted from the lease: one request of rate used, and the pace that sizes the next lease. */
function used(l: RateLease): void {
  const now = Date.now();
  l.tokens--;
  l.rate = decayRate(l.rate, l.rateAt, now) + 1 / (RATE_HALF_LIFE_MS / 1000 / Math.LN2);
  l.rateAt = now;
  l.lastUse = now;
}

/** Requests of rate to lease: a second's worth at the recent pace (one while recalled), within the limit. */
function tokensToAsk(l: RateLease, rpm: number): number {
  return Math.max(1, Math.min(rpm, Date.now() < l.coolUntil ? 1 : Math.ceil(decayRate(l.rate, l.rateAt, Date.now()) * RATE_LEASE_SECONDS)));
}

/** The bucket as the database last answered, and when. */
function seen(l: RateLease, tat: number, dbNow: number): void {
  l.tat = tat;
  l.dbNow = dbNow;
  l.seenAt = Date.now();
}
