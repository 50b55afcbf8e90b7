/**
 * Per-account rate and concurrency limits shared by every instance on the database: one GCRA
 * bucket and one in-flight counter per account (limit_state), one row per slot (slots) owned by
 * the instance that took it. Same semantics as the in-memory AccountLimiter (limits/limiter.ts):
 * burst of rpm, then one every 60/rpm s; concurrency checked first; a refusal for concurrency
 * consumes no rate. Time is the database's clock, so instances' clocks never matter.
 *
 *   admit            one round trip (switchyard_admit), the account's limit_state row locked.
 *   admitAndReserve  the limits AND the hold in one round trip (switchyard_admit_reserve), for a
 *                    caller that knows its hold when it admits.
 *   slot.release()   written behind in batches (one statement for every slot released meanwhile),
 *                    retried until the database takes it; never throws.
 *
 * A dead instance's slots are given back by a survivor with its holds (instances.ts).
 */
import { randomUUID } from "node:crypto";
import type { AccountLimits, Admission, Limiter, RateStatus, Slot } from "../../limits/limiter";
import { rateStatus, WINDOW_MS } from "../../limits/limiter";
import type { HoldRequest, ReserveResult } from "../../billing/ledger-store";
import { nowSeconds } from "../../accounts/accounts";
import { int, outcomeUnknown, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { instanceError, type PostgresLedgerStore } from "./ledger-store";
import { WriteBatcher } from "./write-batcher";

interface AdmitRow {
  admitted: boolean;
  reason: "rate" | "concurrency" | null;
  tat: number;
  now_ms: number;
}

export interface PostgresLimiterOptions {
  maxBatch?: number;
  maxInFlight?: number;
}

export class PostgresLimiter implements Limiter {
  private readonly releases: WriteBatcher<string, boolean>;
  private pendingReleases = 0;

  constructor(
    private readonly db: PgDatabase,
    private readonly instance: InstanceIdentity,
    /** Undoes a hold whose admitAndReserve outcome is unknown. */
    private readonly ledger: PostgresLedgerStore,
    opts: PostgresLimiterOptions = {},
  ) {
    this.releases = new WriteBatcher(
      async (ids) => {
        await this.db.run((sql) => sql`SELECT switchyard_release_slots(${sql.array(ids, "TEXT")}) AS n`);
        return ids.map(() => true);
      },
      { maxBatch: opts.maxBatch ?? 512, maxInFlight: opts.maxInFlight ?? 1, retryMs: 0 },
    );
  }

  async admit(accountId: string, limits: AccountLimits): Promise<Admission> {
    const slotId = randomUUID();
    try {
      const [row] = (await this.db.run((sql) => sql`
        SELECT admitted, reason, tat, now_ms
          FROM switchyard_admit(${slotId}, ${accountId}, ${limits.rateLimitRpm}, ${limits.concurrencyLimit}, ${this.instance.id})`, this.db.answerTimeoutMs)) as AdmitRow[];
      return this.admission(row!, slotId, limits);
    } catch (e) {
      if (outcomeUnknown(e)) this.releaseSlot(slotId);
      throw instanceError(e, this.instance);
    }
  }

  /**
   * Admission and the hold in one round trip. `hold` is null when the limits refused (nothing
   * was held); when the hold was refused for credits the slot is still taken, as if the two had
   * happened apart, and the caller releases it when the request ends.
   */
  async admitAndReserve(limits: AccountLimits, h: HoldRequest): Promise<{ admission: Admission; hold: ReserveResult | null }> {
    if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new RangeError(`bad hold amount ${h.amount}`);
    const slotId = randomUUID();
    try {
      const [row] = (await this.db.run((sql) => sql`
        SELECT admitted, reason, tat, now_ms, held, available
          FROM switchyard_admit_reserve(${slotId}, ${limits.rateLimitRpm}, ${limits.concurrencyLimit},
            ${h.requestId}, ${h.accountId}, ${h.amount}, ${h.endpoint}, ${h.model}, ${this.instance.id}, ${nowSeconds()})`, this.db.answerTimeoutMs)) as (AdmitRow & {
        held: boolean;
        available: string | null;
      })[];
      const admission = this.admission(row!, slotId, limits);
      if (!admission.ok) return { admission, hold: null };
      return { admission, hold: row!.held ? { ok: true } : { ok: false, available: int(row!.available) } };
    } catch (e) {
      if (outcomeUnknown(e)) {
        this.releaseSlot(slotId);
        this.ledger.undoUnknownHold(h.requestId);
      }
      throw instanceError(e, this.instance);
    }
  }

  async peek(accountId: string, limits: AccountLimits): Promise<RateStatus> {
    const [row] = (await this.db.run((sql) => sql`
      SELECT l.tat, switchyard_now_ms() AS now_ms FROM limit_state l WHERE l.account_id = ${accountId}`)) as { tat: number; now_ms: number }[];
    if (!row) return { limit: limits.rateLimitRpm, remaining: limits.rateLimitRpm, resetMs: 0 };
    return rateStatus(row.tat, row.now_ms, limits.rateLimitRpm);
  }

  /** Requests holding a slot for the account, across every instance. */
  async inFlight(accountId: string): Promise<number> {
    const [row] = (await this.db.run((sql) => sql`SELECT in_flight FROM limit_state WHERE account_id = ${accountId}`)) as { in_flight: number }[];
    return row?.in_flight ?? 0;
  }

  /**
   * Resolves once every slot released so far is written, or after `timeoutMs` while the database
   * is away (shutdown must not hang; the slots of a run that stopped are released with it).
   */
  async flush(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pendingReleases > 0 && Date.now() < deadline) await Bun.sleep(5);
    await this.releases.drained();
  }

  private admission(row: AdmitRow, slotId: string, limits: AccountLimits): Admission {
    const rate = rateStatus(row.tat, row.now_ms, limits.rateLimitRpm);
    if (row.admitted) return { ok: true, rate, slot: this.slot(slotId) };
    if (row.reason === "concurrency") return { ok: false, reason: "concurrency", rate, retryAfterMs: 1000 };
    const nextTat = Math.max(row.tat, row.now_ms) + WINDOW_MS / limits.rateLimitRpm;
    return { ok: false, reason: "rate", rate, retryAfterMs: nextTat - row.now_ms - WINDOW_MS };
  }

  private slot(slotId: string): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.releaseSlot(slotId);
      },
      get released() {
        return released;
      },
    };
  }

  /** Writes a slot's release behind, retrying with backoff until the database takes it. */
  private releaseSlot(slotId: string, delay = 100): void {
    if (delay === 100) this.pendingReleases++;
    this.releases.submit(slotId).then(
      () => this.pendingReleases--,
      () => setTimeout(() => this.releaseSlot(slotId, Math.min(delay * 2, 5000)), delay).unref?.(),
    );
  }
}
