/**
 * Per-account rate and concurrency limits shared by every instance on the database: one GCRA
 * bucket and one in-flight counter per account (limit_state), one row per slot (slots) owned by
 * the instance that took it. Same semantics as the in-memory AccountLimiter (limits/limiter.ts):
 * burst of rpm, then one every 60/rpm s; concurrency checked first; a refusal for concurrency
 * consumes no rate. Time is the database's clock, so instances' clocks never matter.
 *
 *   admit            one round trip (switchyard_admit), the account's limit_state row locked.
 *   slot.release()   never waits and never throws: the release is written behind, all slots
 *                    released meanwhile in one statement, retried until the database takes it —
 *                    or, when the same account is admitted again first, carried by that admission
 *                    (same statement, same row lock), so a client's next request never finds its
 *                    previous one's slot still taken on this instance.
 *
 * Admission and the hold are two round trips, not one: admission happens at authentication,
 * before the request body is read (so a client over its limits never makes us read a large body),
 * while the hold's amount is known only once the body is validated (docs/scale-out.md).
 *
 * A dead instance's slots are given back by a survivor with its holds (instances.ts).
 */
import { randomUUID } from "node:crypto";
import type { AccountLimits, Admission, KeyAdmission, Limiter, RateStatus, Slot } from "../../limits/limiter";
import { rateStatus, retryAfterMsOf, WINDOW_MS } from "../../limits/limiter";
import { outcomeUnknown, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { instanceError } from "./ledger-store";

interface AdmitRow {
  admitted: boolean;
  reason: "rate" | "concurrency" | null;
  tat: number;
  now_ms: number;
}

export interface PostgresLimiterOptions {
  /** Most slot releases per statement. */
  maxBatch?: number;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;

export class PostgresLimiter implements Limiter {
  /** Released slots not yet sent, by account. */
  private readonly unsent = new Map<string, Set<string>>();
  /** Per account, the release statement now running that carries some of its slots. */
  private readonly sending = new Map<string, Promise<void>>();
  private scheduled: ReturnType<typeof setTimeout> | null = null;
  private writing = false;
  private retryDelay = RETRY_MIN_MS;
  /** Slots this instance holds now (the in-flight gauge). */
  private held = 0;
  private readonly maxBatch: number;

  constructor(
    private readonly db: PgDatabase,
    private readonly instance: InstanceIdentity,
    opts: PostgresLimiterOptions = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 512;
  }

  async admit(accountId: string, limits: AccountLimits): Promise<Admission> {
    const slotId = randomUUID();
    // Releases of this account not yet sent go with this admission; one being written is waited for.
    const carried = this.takeUnsent(accountId);
    const before = this.sending.get(accountId);
    if (before) await before;
    try {
      const [row] = (await this.db.run((sql) => sql`
        SELECT admitted, reason, tat, now_ms
          FROM switchyard_admit(${slotId}, ${accountId}, ${limits.rateLimitRpm}, ${limits.concurrencyLimit}, ${this.instance.id},
                                ${sql.array(carried, "TEXT")})`, this.db.answerTimeoutMs)) as AdmitRow[];
      return this.admission(row!, accountId, slotId, limits);
    } catch (e) {
      // Releases are idempotent: the carried ones go out again, alone.
      for (const id of carried) this.queueRelease(accountId, id);
      if (outcomeUnknown(e)) this.queueRelease(accountId, slotId);
      throw instanceError(e, this.instance);
    }
  }

  async peek(accountId: string, limits: AccountLimits): Promise<RateStatus> {
    const [row] = (await this.db.run((sql) => sql`
      SELECT l.tat, switchyard_now_ms() AS now_ms FROM limit_state l WHERE l.account_id = ${accountId}`)) as { tat: number; now_ms: number }[];
    if (!row) return { limit: limits.rateLimitRpm, remaining: limits.rateLimitRpm, resetMs: 0 };
    return rateStatus(row.tat, row.now_ms, limits.rateLimitRpm);
  }

  /** A key's own rate: one round trip (switchyard_key_rate, migration 006), the key's bucket row locked. */
  async admitKey(keyId: string, rpm: number): Promise<KeyAdmission> {
    try {
      const [row] = (await this.db.run((sql) => sql`
        SELECT admitted, tat, now_ms FROM switchyard_key_rate(${keyId}, ${rpm})`, this.db.answerTimeoutMs)) as { admitted: boolean; tat: number; now_ms: number }[];
      const rate = rateStatus(row!.tat, row!.now_ms, rpm);
      return row!.admitted ? { ok: true, rate } : { ok: false, rate, retryAfterMs: retryAfterMsOf(row!.tat, row!.now_ms, rpm) };
    } catch (e) {
      throw instanceError(e, this.instance);
    }
  }

  async peekKey(keyId: string, rpm: number): Promise<RateStatus> {
    const [row] = (await this.db.run((sql) => sql`
      SELECT k.tat, switchyard_now_ms() AS now_ms FROM key_rate_state k WHERE k.key_id = ${keyId}`)) as { tat: number; now_ms: number }[];
    if (!row) return { limit: rpm, remaining: rpm, resetMs: 0 };
    return rateStatus(row.tat, row.now_ms, rpm);
  }

  /** Requests holding a slot for the account, across every instance. */
  async inFlight(accountId: string): Promise<number> {
    const [row] = (await this.db.run((sql) => sql`SELECT in_flight FROM limit_state WHERE account_id = ${accountId}`)) as { in_flight: number }[];
    return row?.in_flight ?? 0;
  }

  totalInFlight(): number {
    return this.held;
  }

  /**
   * Resolves once every slot released so far is written, or after `timeoutMs` while the database
   * is away (shutdown must not hang; the slots of a run that stopped are released with it).
   */
  async flush(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.unsent.size > 0 || this.writing) && Date.now() < deadline) {
      if (!this.writing && this.scheduled) {
        clearTimeout(this.scheduled);
        this.scheduled = null;
        void this.writeReleases();
      }
      await Bun.sleep(5);
    }
  }

  private admission(row: AdmitRow, accountId: string, slotId: string, limits: AccountLimits): Admission {
    const rate = rateStatus(row.tat, row.now_ms, limits.rateLimitRpm);
    if (row.admitted) return { ok: true, rate, slot: this.slot(accountId, slotId) };
    if (row.reason === "concurrency") return { ok: false, reason: "concurrency", rate, retryAfterMs: 1000 };
    const nextTat = Math.max(row.tat, row.now_ms) + WINDOW_MS / limits.rateLimitRpm;
    return { ok: false, reason: "rate", rate, retryAfterMs: nextTat - row.now_ms - WINDOW_MS };
  }

  private slot(accountId: string, slotId: string): Slot {
    let released = false;
    this.held++;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held--;
        this.queueRelease(accountId, slotId);
      },
      get released() {
        return released;
      },
    };
  }

  private takeUnsent(accountId: string): string[] {
    const ids = this.unsent.get(accountId);
    if (!ids) return [];
    this.unsent.delete(accountId);
    return [...ids];
  }

  /** Queues a release; the next turn of the event loop writes every release queued meanwhile. */
  private queueRelease(accountId: string, slotId: string): void {
    this.addUnsent(accountId, slotId);
    this.schedule(0);
  }

  private addUnsent(accountId: string, slotId: string): void {
    let ids = this.unsent.get(accountId);
    if (!ids) this.unsent.set(accountId, (ids = new Set()));
    ids.add(slotId);
  }

  private schedule(delayMs: number): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = setTimeout(() => {
      this.scheduled = null;
      void this.writeReleases();
    }, delayMs);
    this.scheduled.unref?.();
  }

  /** One statement for the releases queued so far (at most maxBatch); failures are queued again. */
  private async writeReleases(): Promise<void> {
    if (this.writing || this.unsent.size === 0) return;
    this.writing = true;
    const batch: [string, string][] = [];
    for (const [accountId, ids] of this.unsent) {
      for (const id of ids) {
        if (batch.length >= this.maxBatch) break;
        batch.push([accountId, id]);
        ids.delete(id);
      }
      if (ids.size === 0) this.unsent.delete(accountId);
      if (batch.length >= this.maxBatch) break;
    }
    const accounts = new Set(batch.map(([a]) => a));
    let ok = true;
    const done = this.db
      .run((sql) => sql`SELECT switchyard_release_slots(${sql.array(batch.map(([, id]) => id), "TEXT")}) AS n`)
      .then(
        () => {},
        () => {
          ok = false;
          for (const [a, id] of batch) this.addUnsent(a, id);
        },
      );
    for (const a of accounts) this.sending.set(a, done);
    await done;
    for (const a of accounts) if (this.sending.get(a) === done) this.sending.delete(a);
    this.writing = false;
    this.retryDelay = ok ? RETRY_MIN_MS : Math.min(this.retryDelay * 2, RETRY_MAX_MS);
    if (this.unsent.size > 0) this.schedule(ok ? 0 : this.retryDelay);
  }
}
