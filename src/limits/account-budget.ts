/**
 * A per-account budget of work in progress (characters queued for counting, bytes of count_tokens
 * bodies being counted): take() before the work, give() back after it, whatever its outcome.
 * In memory, per instance: it bounds what one account can make this process hold at once.
 */
export class AccountBudget {
  private readonly used = new Map<string, number>();

  constructor(readonly cap: number) {}

  /**
   * Reserves `n` for the account; false (nothing reserved) when that would pass the cap. An
   * account holding nothing may always take one piece of work, however large (else work above
   * the cap could never run); `force` takes regardless (work already paid for, never refused).
   */
  take(account: string, n: number, force = false): boolean {
    const now = this.used.get(account) ?? 0;
    if (!force && now > 0 && now + n > this.cap) return false;
    this.used.set(account, now + n);
    return true;
  }

  /** Whether take(account, n) would succeed now (nothing is reserved). */
  fits(account: string, n: number): boolean {
    const now = this.used.get(account) ?? 0;
    return now === 0 || now + n <= this.cap;
  }

  /** Returns what take() reserved. */
  give(account: string, n: number): void {
    const left = (this.used.get(account) ?? 0) - n;
    if (left > 0) this.used.set(account, left);
    else this.used.delete(account);
  }

  /** What the account holds now. */
  inUse(account: string): number {
    return this.used.get(account) ?? 0;
  }
}
