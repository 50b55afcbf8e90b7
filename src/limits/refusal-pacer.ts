/**
 * Paces an account's refused large uploads. A request refused before its body was read (a 429:
 * its rate, its requests or count_tokens bytes in flight) is answered with `Connection: close`,
 * but by then the client has already pushed megabytes into the socket, and closing it costs the
 * server about 0.7 ms of kernel time per 8 MiB request (0.07 ms for a small one), measured.
 * A client that honours Retry-After costs that once a second per request slot; one that retries
 * at once (32 connections of 8 MiB count_tokens: ~1,500 refusals a second) keeps a core busy with
 * them, and every other account waits for that core.
 *
 * So a large refusal that comes within `windowMs` of the same account's previous one is held
 * for the window (its Retry-After) before it is answered: a client that retries at once is then
 * paced like one that waits. A client that waits as told is never held for its own retries, but
 * when an account has several large uploads refused within a second, all but the first are held:
 * they then come back after two seconds rather than one. Holding costs an open
 * socket whose receive buffer is full, so at most `perAccount` refusals per account and `total`
 * in all are held; past either, refusals are answered at once, as before.
 */

export interface RefusalPacerOptions {
  /** How long a repeated refusal is held, and how close to the previous one it must come: Retry-After. */
  windowMs: number;
  /** Most refusals one account may have held at once. */
  perAccount: number;
  /** Most refusals held at once in all. */
  total: number;
}

export const DEFAULT_REFUSAL_PACING: RefusalPacerOptions = { windowMs: 1000, perAccount: 32, total: 1024 };

interface AccountRefusals {
  last: number;
  held: number;
}

/** Accounts remembered before the ones with nothing held and no recent refusal are forgotten. */
const SWEEP_AT = 4096;

export class RefusalPacer {
  private readonly accounts = new Map<string, AccountRefusals>();
  private heldTotal = 0;

  constructor(
    private readonly opts: RefusalPacerOptions = DEFAULT_REFUSAL_PACING,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The account's large upload was refused: how many milliseconds to hold the answer (0: answer
   * now). A positive answer must be followed by release(account) once the answer is sent.
   */
  refused(account: string): number {
    const t = this.now();
    let a = this.accounts.get(account);
    if (!a) {
      if (this.accounts.size >= SWEEP_AT) this.sweep(t);
      a = { last: -Infinity, held: 0 };
      this.accounts.set(account, a);
    }
    const repeated = t - a.last < this.opts.windowMs;
    a.last = t;
    if (!repeated || a.held >= this.opts.perAccount || this.heldTotal >= this.opts.total) return 0;
    a.held++;
    this.heldTotal++;
    return this.opts.windowMs;
  }

  /** A held answer was sent (or its client left). */
  release(account: string): void {
    const a = this.accounts.get(account);
    if (!a || a.held === 0) return;
    a.held--;
    this.heldTotal--;
  }

  /** Refusals held now: for the account, or in all. */
  held(account?: string): number {
    return account === undefined ? this.heldTotal : (this.accounts.get(account)?.held ?? 0);
  }

  private sweep(t: number): void {
    for (const [id, a] of this.accounts) if (a.held === 0 && t - a.last >= this.opts.windowMs) this.accounts.delete(id);
  }
}
