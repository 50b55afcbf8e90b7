/**
 * Per-account rate and concurrency limits shared by every instance on the database: one GCRA
 * bucket and one in-flight counter per account (limit_state), one row per slot (slots) owned by
 * the instance that took it. Same semantics as the in-memory AccountLimiter (limits/limiter.ts):
 * burst of rpm, then one every 60/rpm s; concurrency checked first; a refusal for concurrency
 * consumes no rate. Time is the database's clock, so instances' clocks never matter.
 *
 *   admit            one round trip (switchyard_admit), the account's limit_state row locked.
 *   slot.release()   written behind in batches (one statement for every slot released meanwhile),
 *                    retried until the database takes it; never throws.
 *
 * Admission and the hold are two round trips, not one: admission happens at authentication,
 * before the request body is read (so a client over its limits never makes us read a large body),
 * while the hold's amount is known only once the body is validated (README, "Scaling out").
 *
 * A dead instance's slots are given back by a survivor with its holds (instances.ts).
 */
import { randomUUID } from "node:crypto";
import type { AccountLimits, Admission, Limiter, RateStatus, Slot } from "../../limits/limiter";
import { rateStatus, WINDOW_MS } from "../../limits/limiter";
import { outcomeUnknown, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { instanceError } from "./ledger-store";
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
  /** Slots this instance holds now (the in-flight gauge). */
  private held = 0;

  constructor(
    private readonly db: PgDatabase,
    private readonly instance: InstanceIdentity,
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

  totalInFlight(): number {
    return this.held;
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
    this.held++;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held--;
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
