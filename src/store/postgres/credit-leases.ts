/**
 * This instance's credit leases, in memory: per account (and per key with a spend limit), how much
 * of its money the database has moved to this instance (`leased`), how much of that is charged
 * here but not shipped yet (`spent`, in the charge journal), and — from the hold book — what its
 * requests in flight hold. A hold fits when leased − spent − held covers it: then it is booked at
 * once, with no round trip (docs/scale-out.md, "Leases").
 *
 * The mirror is kept conservative: a top-up whose answer was lost counts as not granted, a return
 * whose answer was lost as returned, so this instance never spends more than the database set
 * aside for it. What is left over comes back when the instance releases (restart, survivors).
 *
 * Sizing: a lease is what the account spent here in the last LEASE_SECONDS (an exponentially
 * decaying rate), at least LEASE_MIN_HOLDS holds of the one that asked; a lease with less than a
 * third of that left is topped up in the background. After a recall (another instance could not
 * fit a hold) the account is leased nothing more for RECALL_COOLDOWN_MS: its requests go on the
 * direct path, one hold row each, so two instances do not pass a small balance back and forth.
 */
import type { HoldBook } from "../../billing/hold-book";
import type { HeldFigures } from "../../billing/live-reserved";

const LEASE_SECONDS = 2;
const LEASE_MIN_HOLDS = 4;
/** After a recall, this long with nothing more leased of what was recalled (credit, slots, rate). */
export const RECALL_COOLDOWN_MS = 5_000;
/** Rate half-life: a lease (of credit, or of rate) follows a change of pace within a few seconds. */
export const RATE_HALF_LIFE_MS = 2_000;

export interface LeaseMirror {
  leased: number;
  spent: number;
  /** Spend per second here, decaying (units/s), and when it was last moved. */
  rate: number;
  rateAt: number;
  lastUse: number;
  /** Until when nothing more is leased (a recall asked for it). */
  coolUntil: number;
  /** The size of the last lease asked for (the top-up mark is a third of it). */
  lastWant: number;
}

export type LeaseKind = "credit" | "key";

const fresh = (now: number): LeaseMirror => ({ leased: 0, spent: 0, rate: 0, rateAt: now, lastUse: now, coolUntil: 0, lastWant: 0 });

export class CreditLeases {
  readonly accounts = new Map<string, LeaseMirror>();
  readonly keys = new Map<string, LeaseMirror>();
  /** Whether each key has a spend limit, as the database last said (unknown: ask it). */
  private readonly keyLimited = new Map<string, boolean>();

  constructor(private readonly now: () => number = Date.now) {}

  private table(kind: LeaseKind): Map<string, LeaseMirror> {
    return kind === "credit" ? this.accounts : this.keys;
  }

  mirror(kind: LeaseKind, id: string): LeaseMirror {
    const t = this.table(kind);
    let m = t.get(id);
    if (!m) t.set(id, (m = fresh(this.now())));
    return m;
  }

  /** What the lease has left for new holds. */
  free(kind: LeaseKind, id: string, book: HoldBook): number {
    const m = this.table(kind).get(id);
    if (!m) return 0;
    return m.leased - m.spent - (kind === "credit" ? book.held(id) : book.heldByKey(id));
  }

  /** True when the key has no spend limit (its holds need no key lease), false when it has, undefined when unknown. */
  keyUnlimited(keyId: string): boolean | undefined {
    const limited = this.keyLimited.get(keyId);
    return limited === undefined ? undefined : !limited;
  }

  learnKey(keyId: string, limited: boolean): void {
    this.keyLimited.set(keyId, limited);
  }

  /** A key's controls may have changed: ask the database again. */
  forgetKeys(): void {
    this.keyLimited.clear();
  }

  /** A hold of `amount` was booked here: the account's pace follows it. */
  used(kind: LeaseKind, id: string, amount: number): void {
    const m = this.mirror(kind, id);
    const now = this.now();
    m.rate = decayed(m, now) + amount / (RATE_HALF_LIFE_MS / 1000 / Math.LN2);
    m.rateAt = now;
    m.lastUse = now;
  }

  /** How much to lease for a hold of `amount` (0: lease nothing, go direct). */
  want(kind: LeaseKind, id: string, amount: number): number {
    const m = this.mirror(kind, id);
    const now = this.now();
    if (now < m.coolUntil) return 0;
    const w = Math.max(LEASE_MIN_HOLDS * amount, Math.ceil(decayed(m, now) * LEASE_SECONDS));
    m.lastWant = w;
    return w;
  }

  /** Whether the lease runs low (less than a third of its last size left): top up in the background. */
  low(kind: LeaseKind, id: string, book: HoldBook): boolean {
    const m = this.table(kind).get(id);
    if (!m || m.lastWant === 0 || this.now() < m.coolUntil) return false;
    return this.free(kind, id, book) < m.lastWant / 3;
  }

  granted(kind: LeaseKind, id: string, amount: number): void {
    if (amount > 0) this.mirror(kind, id).leased += amount;
  }

  /** A charge of `amount` was journaled here: spent, until shipped. */
  charged(accountId: string, keyId: string | null, amount: number): void {
    this.mirror("credit", accountId).spent += amount;
    if (keyId !== null && this.keys.has(keyId)) this.mirror("key", keyId).spent += amount;
  }

  /** The database took a charge journaled here: `amount` left the lease (and the balance). */
  shipped(accountId: string, keyId: string | null, journaled: number): void {
    const a = this.mirror("credit", accountId);
    a.spent = Math.max(0, a.spent - journaled);
    a.leased = Math.max(0, a.leased - journaled);
    if (keyId !== null && this.keys.has(keyId)) {
      const k = this.mirror("key", keyId);
      k.spent = Math.max(0, k.spent - journaled);
      k.leased = Math.max(0, k.leased - journaled);
    }
  }

  returned(kind: LeaseKind, id: string, amount: number): void {
    const m = this.table(kind).get(id);
    if (m) m.leased = Math.max(0, m.leased - amount);
  }

  /** A recall: what can go back now (unused), and nothing more is leased for a while. */
  recall(kind: LeaseKind, id: string, book: HoldBook): number {
    const m = this.table(kind).get(id);
    if (!m) return 0;
    m.coolUntil = this.now() + RECALL_COOLDOWN_MS;
    return Math.max(0, this.free(kind, id, book));
  }

  /** Leases unused for `idleMs`: what each can give back (kind, id, amount). */
  idle(idleMs: number, book: HoldBook): { kind: LeaseKind; subject: string; amount: number }[] {
    const out: { kind: LeaseKind; subject: string; amount: number }[] = [];
    const now = this.now();
    for (const kind of ["credit", "key"] as const) {
      for (const [id, m] of this.table(kind)) {
        const free = this.free(kind, id, book);
        if (now - m.lastUse >= idleMs && free > 0) out.push({ kind, subject: id, amount: free });
        else if (m.leased === 0 && m.spent === 0 && now - m.lastUse >= idleMs) this.table(kind).delete(id);
      }
    }
    return out;
  }

  /** Everything unused, for a clean stop. */
  all(book: HoldBook): { kind: LeaseKind; subject: string; amount: number }[] {
    const out: { kind: LeaseKind; subject: string; amount: number }[] = [];
    for (const kind of ["credit", "key"] as const) {
      for (const id of this.table(kind).keys()) {
        const free = this.free(kind, id, book);
        if (free > 0) out.push({ kind, subject: id, amount: free });
      }
    }
    return out;
  }

  /** This instance was released (its leases went back to their accounts): it leases nothing now. */
  forgetLeases(): void {
    for (const t of [this.accounts, this.keys]) for (const m of t.values()) m.leased = 0;
  }
}

function decayed(m: LeaseMirror, now: number): number {
  return decayRate(m.rate, m.rateAt, now);
}

/** A pace measured at `at`, as it stands at `now` (it halves every RATE_HALF_LIFE_MS of quiet). */
export function decayRate(rate: number, at: number, now: number): number {
  return rate * Math.pow(0.5, (now - at) / RATE_HALF_LIFE_MS);
}

/**
 * The live figures of billing/live-reserved.ts on PostgreSQL: the store reads every instance's
 * leases as reserved, so this instance's own lease is taken out again and its holds put in, and
 * the charges it journaled but did not ship yet come off the balance.
 */
export function leasedFigures(ledger: { held(accountId: string): number; heldByKey(keyId: string): number }, leases: CreditLeases): HeldFigures {
  return {
    // The lease is what is charged here (off the balance below), held, or free.
    held: (id) => ledger.held(id) - (leases.accounts.get(id)?.leased ?? 0),
    // A key's spend does not have the unshipped charges yet: they count as held until shipped.
    heldByKey: (id) => ledger.heldByKey(id) - (leases.keys.get(id)?.leased ?? 0) + (leases.keys.get(id)?.spent ?? 0),
    unshipped: (id) => leases.accounts.get(id)?.spent ?? 0,
  };
}
