/**
 * The ledger's view of its store's health (ledger.ts): when the store cannot write
 * (StoreUnavailable: disk full, database locked past the bounded wait, unreachable), new holds are
 * refused with 503 service_unavailable before any upstream is called; for the probe interval after
 * each failure they are refused without touching the store, then the next reserve is the probe.
 * Any successful write marks the store healthy (and the ledger retries its queued voids at once).
 */
import type { Log } from "../log";
import type { StoreUnavailable } from "./ledger-store";

/** After a store failure, reserves are refused without a write for this long; then one probes. */
export const PROBE_INTERVAL_MS = 500;

export class StoreHealth {
  private unavailable: StoreUnavailable | null = null;
  /**
   * Counts store failures. A write vouches for the store only if no failure was reported while it
   * ran (a failure reported by the store itself, not through that write's promise, counts too).
   */
  private failures = 0;
  private unavailableUntil = 0;

  constructor(
    private readonly log: Log,
    private readonly probeIntervalMs: number,
    /** Called whenever a write vouches for the store (the queued voids go now). */
    private readonly onHealthy: () => void,
  ) {}

  /** The failure count a write begins at: pass it to markHealthy once the write succeeded. */
  get epoch(): number {
    return this.failures;
  }

  /** True while new holds are refused without touching the store (until the next probe). */
  refusing(): boolean {
    return this.unavailable !== null && Date.now() < this.unavailableUntil;
  }

  /** False while the last write failed and no write succeeded since. */
  get writable(): boolean {
    return this.unavailable === null;
  }

  markUnavailable(e: StoreUnavailable): void {
    this.failures++;
    if (!this.unavailable) {
      this.log.error("the ledger cannot write; new requests are refused with 503 until it can", { reason: e.reason, detail: e.message.slice(0, 300) });
    }
    // A store that will write nothing more stays refused until the process restarts.
    if (this.unavailable?.final) return;
    this.unavailable = e;
    this.unavailableUntil = e.final ? Infinity : Date.now() + this.probeIntervalMs;
  }

  /** A write that began at failure count `epoch` succeeded. */
  markHealthy(epoch: number): void {
    if (epoch !== this.failures) return;
    if (this.unavailable) {
      this.log.warn("the ledger writes again; requests are accepted", { was: this.unavailable.reason });
      this.unavailable = null;
    }
    this.onHealthy();
  }
}
