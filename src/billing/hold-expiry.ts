/**
 * Hold expiry (SWITCHYARD_HOLD_EXPIRY_SECONDS, docs/operate.md "Limits, usage and metrics"): a hold still
 * open that long after it was taken is released, whatever its request is doing, so a stuck
 * request never keeps money held. The ledger (ledger.ts) dates each hold by this clock, registers
 * the holds of this process while they are open, and sweeps every so often: holds booked in
 * memory are released here; holds a store wrote itself (PostgreSQL's direct path, any
 * instance's) are voided by the store.
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
   * Releases every hold of this process open longer than the expiry and not being settled (a hold
   * being settled resolves either way), then has the store void its direct holds past the expiry
   * — this process's and (PostgreSQL) any other's. A released hold's later settle is refused and
   * it is never charged. Never rejects. Returns how many were released.
   */
  async sweep(hooks: ExpiryHooks): Promise<number> {
    const before = this.dateNow() - this.seconds;
    let released = 0;
    for (const hold of this.live.values()) {
      if (hold.direct || hold.createdAt >= before || hold.status !== "open") continue;
      this.log.warn("a hold open past its expiry was released", { request_id: hold.requestId, expiry_seconds: this.seconds });
      hooks.closeExpired(hold);
      released++;
    }
    let ids: string[];
    try {
      ids = await this.store.expireHolds(before);
    } catch (e) {
      hooks.failed(e);
      return released;
    }
    for (const id of ids) {
      this.log.warn("a hold pending past its expiry was voided", { request_id: id, expiry_seconds: this.seconds });
      const hold = this.live.get(id);
      if (hold && hold.status === "open") hooks.closeExpired(hold);
    }
    return released + ids.length;
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
