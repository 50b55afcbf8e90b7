/**
 * Voids of direct holds the store could not write yet (ledger.ts): queued by request id and
 * written again in one batch, after RETRY_MIN_MS and doubling up to RETRY_MAX_MS while they fail,
 * or at once when another write shows the store healthy again (StoreHealth). A void that finds
 * nothing pending closes its hold all the same: it was voided or posted before.
 */
import type { Log } from "../log";
import type { Hold } from "./hold";
import { StoreUnavailable } from "./ledger-store";
import type { StoreHealth } from "./store-health";

/** Queued voids are retried after this long, doubling up to RETRY_MAX_MS while they fail. */
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2_000;

export interface VoidRetryDeps {
  /** The store's void of a direct hold (true: it was pending and is voided now). */
  voidDirect(requestId: string): Promise<boolean>;
  health: StoreHealth;
  log: Log;
  /** Closes a hold as released, once (null: a hold whose reserve's answer was lost). */
  closeVoided(hold: Hold | null): void;
}

export class VoidRetries {
  /** Voids the store could not write yet, by request id. */
  private readonly retries = new Map<string, Hold | null>();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private retryDelay = RETRY_MIN_MS;
  private draining = false;
  private closed = false;

  constructor(private readonly deps: VoidRetryDeps) {}

  /** Voids still waiting for the store to write again. */
  get size(): number {
    return this.retries.size;
  }

  queue(requestId: string, hold: Hold | null): void {
    this.retries.set(requestId, hold);
    this.scheduleRetry();
  }

  /** The store wrote: what is queued is tried now rather than at its timer. */
  wake(): void {
    if (this.retries.size > 0 && !this.draining) void this.now();
  }

  /** Tries the queued voids now instead of at the next retry. */
  async now(): Promise<void> {
    this.clearTimer();
    await this.drainRetries();
  }

  /** Stops retrying. */
  close(): void {
    this.closed = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer || this.draining || this.retries.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.drainRetries();
    }, this.retryDelay);
    // A server is kept alive by its listener; queued voids alone must not keep a process running.
    this.retryTimer.unref?.();
  }

  /** Writes every queued void (in one batch); what still fails waits for the next attempt. */
  private async drainRetries(): Promise<void> {
    if (this.draining || this.closed || this.retries.size === 0) return;
    this.draining = true;
    const { health, log } = this.deps;
    const epoch = health.epoch;
    let failed = false;
    try {
      await Promise.all(
        [...this.retries].map(async ([requestId, hold]) => {
          try {
            // Voided now, or nothing pending (voided or posted before): either way no longer held.
            const voided = await this.deps.voidDirect(requestId);
            this.retries.delete(requestId);
            if (!voided && hold?.chargeMayExist) {
              // Its settle failed (the client was told so, neutrally), yet its charge had been written.
              log.warn("a charge reported as failed had been written: the request is charged", { request_id: requestId });
            }
            this.deps.closeVoided(hold);
          } catch (e) {
            failed = true;
            if (e instanceof StoreUnavailable) health.markUnavailable(e);
            else log.error("ledger void failed; retrying", { request_id: requestId, error: String((e as Error)?.message ?? e).slice(0, 300) });
          }
        }),
      );
    } finally {
      this.draining = false;
    }
    if (failed) this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
    else {
      this.retryDelay = RETRY_MIN_MS;
      health.markHealthy(epoch);
    }
    this.scheduleRetry();
  }
}
