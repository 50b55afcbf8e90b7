/**
 * Hold expiry (SWITCHYARD_HOLD_EXPIRY_SECONDS, README "Limits, usage and metrics"): a hold still
 * pending that long after it was taken is voided by the store, whatever its request is doing, so
 * a stuck request never keeps money held. The ledger (ledger.ts) dates each hold by this clock,
 * registers the holds of this process while they are open, and sweeps every so often.
 */
import type { Log } from "../log";
import type { LedgerStore } from "./ledger-store";
import type { Hold } from "./hold";

export const DEFAULT_HOLD_EXPIRY_SECONDS = 1200;

export interface ExpiryHooks {
  /** A hold of this process the store voided: close it as released (it is not being settled). */
  closeExpired(hold: Hold): void;
  /** The sweep failed; the next one retries. */
  failed(e: unknown): void;
}

export class HoldExpiry {
  /** The holds this process reserved and has not closed yet, by request id. */
  private readonly live = new Map<string, Hold>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly store: LedgerStore,
    private readonly log: Log,
    readonly seconds: number,
    /** The clock holds are dated and expired by (ms); tests and the randomized checker move it. */
    private readonly now: () => number,
  ) {}

  /** When a hold taken now is dated (Unix seconds). */
  dateNow(): number {
    return Math.floor(this.now() / 1000);
  }

  track(hold: Hold): void {
    this.live.set(hold.requestId, hold);
  }

  forget(requestId: string): void {
    this.live.delete(requestId);
  }

  /**
   * Voids every hold pending longer than the expiry, in the store — this process's and (PostgreSQL)
   * any other's. A hold of this process that is not being settled closes as released (a later
   * settle is refused, its release says "voided"); one being settled finds nothing pending and is
   * never charged. Never rejects. Returns how many were voided.
   */
  async sweep(hooks: ExpiryHooks): Promise<number> {
    let ids: string[];
    try {
      ids = await this.store.expireHolds(this.dateNow() - this.seconds);
    } catch (e) {
      hooks.failed(e);
      return 0;
    }
    for (const id of ids) {
      this.log.warn("a hold pending past its expiry was voided", { request_id: id, expiry_seconds: this.seconds });
      const hold = this.live.get(id);
      if (hold && hold.status === "open") hooks.closeExpired(hold);
    }
    return ids.length;
  }

  /** Sweeps every `intervalMs` (never keeps the process alive). */
  start(intervalMs: number, sweep: () => Promise<unknown>): void {
    if (this.timer) return;
    this.timer = setInterval(() => void sweep(), intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
