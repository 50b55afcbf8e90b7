/**
 * How the PostgreSQL ledger store (ledger-store.ts) grants holds, with the database off the
 * request path when it can be:
 *
 *   in memory, from this instance's lease of the account's money (and of its key's limit), when
 *   the lease covers the hold: no round trip (credit-leases.ts keeps the mirror). Otherwise one
 *   statement, switchyard_grant (migration 011): a new lease (then booked in memory), or — for a
 *   balance too small to lease — a hold row of its own (the direct path), or a refusal. Before
 *   refusing, the other instances are asked to give back what they lease of it (NOTIFY on
 *   switchyard_recall) and the grant is tried again within the recall time.
 *
 * A lease running low is topped up off the request path; leases unused for LEASE_IDLE_MS go back,
 * and all of them at a clean stop (after the journal is shipped: the store's flush); a dead
 * instance's come back through the instance-release path.
 */
import type { GrantRequest, GrantResult } from "../../billing/ledger-store";
import type { HoldBook } from "../../billing/hold-book";
import { nowSeconds } from "../../accounts/accounts";
import { periodStarts } from "../../billing/key-periods";
import { int, outcomeUnknown, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { CreditLeases, type LeaseKind } from "./credit-leases";
import { instanceError } from "./instance-error";
import { RECALL_CHANNEL } from "./changes";

/** A lease unused this long goes back to its account. */
export const LEASE_IDLE_MS = 5_000;
/** How long a grant that does not fit waits for other instances to give their leases back. */
export const DEFAULT_RECALL_MS = 500;
/** How often leases are looked at for idle ones to give back. */
export const IDLE_SWEEP_MS = Math.max(250, Math.floor(LEASE_IDLE_MS / 5));

interface GrantRow {
  mode: "lease" | "direct" | "none";
  granted: string;
  key_granted: string;
  available: string | null;
  key_available: string | null;
  key_limit: string | null;
  /** What the other instances lease of the account, and of the key: all a recall could bring back. */
  others_leased: string | null;
  key_others_leased: string | null;
}

export interface LeaseGrantOptions {
  /** Whether holds may come from leases: only with a charge journal to post their charges to. */
  leasing: boolean;
  /** How long a grant waits for a recall (ms). */
  recallMs: number;
  /** Voids a direct hold whose grant may have committed unseen (the store's batched void). */
  undoUnknownHold: (requestId: string) => void;
}

export class LeaseGrants {
  readonly leases = new CreditLeases();
  /** Grants under way per account: a request that does not fit waits for the one already asking. */
  private readonly asking = new Map<string, Promise<unknown>>();
  /** Every grant under way per account, whose answers may still add to this instance's lease. */
  private readonly pending = new Map<string, Set<Promise<unknown>>>();
  /** The hold book of the ledger this store serves (known from its first grant), for returns. */
  private book: HoldBook | null = null;
  private idleTimer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly db: PgDatabase, private readonly instance: InstanceIdentity, private readonly opts: LeaseGrantOptions) {}

  /** Starts giving idle leases back (a serving instance). */
  startIdleReturns(): void {
    if (this.idleTimer) return;
    this.idleTimer = setInterval(() => void this.returnIdle(), IDLE_SWEEP_MS);
    this.idleTimer.unref?.();
  }

  /** Stops giving idle leases back (shutdown: returnAll follows). */
  stopIdleReturns(): void {
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.idleTimer = null;
  }

  /** A hold of a checked amount: from the leases at once when they cover it, else via the database. */
  grant(g: GrantRequest, book: HoldBook): GrantResult | Promise<GrantResult> {
    this.book = book;
    if (this.opts.leasing && this.fromLease(g, book)) return { ok: true, direct: false };
    return this.grantSlow(g, book);
  }

  /** Books the hold against this instance's leases when they cover it (synchronously). */
  private fromLease(g: GrantRequest, book: HoldBook): boolean {
    if (this.leases.free("credit", g.accountId, book) < g.amount) return false;
    const keyId = g.key?.id ?? null;
    let keyLimited = false;
    if (keyId !== null) {
      const unlimited = this.leases.keyUnlimited(keyId);
      if (unlimited === undefined) return false;
      keyLimited = !unlimited;
      if (keyLimited && this.leases.free("key", keyId, book) < g.amount) return false;
    }
    book.add({ requestId: g.requestId, accountId: g.accountId, keyId, amount: g.amount, createdAt: g.createdAt ?? nowSeconds() });
    this.leases.used("credit", g.accountId, g.amount);
    if (keyLimited) this.leases.used("key", keyId!, g.amount);
    if (this.asking.has(g.accountId)) return true;
    const lowA = this.leases.low("credit", g.accountId, book);
    const lowK = keyLimited && this.leases.low("key", keyId!, book);
    if (lowA || lowK) this.topUp(g, lowA, lowK);
    return true;
  }

  /** A lease running low is topped up off the request path. */
  private topUp(g: GrantRequest, lowA: boolean, lowK: boolean): void {
    const wantA = lowA ? this.leases.want("credit", g.accountId, g.amount) : 0;
    const wantK = lowK ? this.leases.want("key", g.key!.id, g.amount) : 0;
    if (wantA === 0 && wantK === 0) return;
    const p = this.askGrant({ ...g, requestId: "" }, wantA, wantK).then((row) => this.learn(g, row), () => {});
    this.track(g.accountId, p);
  }

  private track(accountId: string, p: Promise<unknown>): void {
    this.asking.set(accountId, p);
    let set = this.pending.get(accountId);
    if (!set) this.pending.set(accountId, (set = new Set()));
    set.add(p);
    const done = () => {
      if (this.asking.get(accountId) === p) this.asking.delete(accountId);
      set.delete(p);
      if (set.size === 0 && this.pending.get(accountId) === set) this.pending.delete(accountId);
    };
    p.then(done, done);
  }

  private learn(g: GrantRequest, row: GrantRow): void {
    if (g.key) this.leases.learnKey(g.key.id, row.key_limit !== null);
    if (row.mode !== "lease") return;
    this.leases.granted("credit", g.accountId, int(row.granted));
    if (g.key) this.leases.granted("key", g.key.id, int(row.key_granted));
  }

  /**
   * The hold did not fit the leases: wait for a grant already asking for this account, or ask
   * (a lease, the direct path, or a refusal); before refusing, recall the other instances' leases
   * and try again until the recall time is up.
   */
  private async grantSlow(g: GrantRequest, book: HoldBook): Promise<GrantResult> {
    const leasing = this.opts.leasing;
    const deadline = Date.now() + this.opts.recallMs;
    let pause = 10;
    let ownBack = false;
    for (;;) {
      const under = this.asking.get(g.accountId);
      if (under && leasing) {
        await under.catch(() => {});
        if (this.fromLease(g, book)) return { ok: true, direct: false };
      }
      const keyId = g.key?.id ?? null;
      const wantA = !leasing ? 0 : this.leases.free("credit", g.accountId, book) >= g.amount ? 0 : this.leases.want("credit", g.accountId, g.amount);
      const keyLimited = keyId === null ? false : this.leases.keyUnlimited(keyId) !== true;
      const wantK = !leasing || !keyLimited || this.leases.free("key", keyId!, book) >= g.amount ? 0 : this.leases.want("key", keyId!, g.amount);
      const asked = this.askGrant(g, leasing ? Math.max(wantA, wantA === 0 && wantK === 0 && this.leases.free("credit", g.accountId, book) < g.amount ? g.amount : 0) : Infinity, wantK);
      this.track(g.accountId, asked);
      let row: GrantRow;
      try {
        row = await asked;
      } catch (e) {
        if (outcomeUnknown(e) && g.requestId) this.opts.undoUnknownHold(g.requestId);
        throw instanceError(e, this.instance);
      }
      this.learn(g, row);
      if (row.mode === "lease") {
        if (this.fromLease(g, book)) return { ok: true, direct: false };
        continue;
      }
      if (row.mode === "direct") return { ok: true, direct: true };
      // Not even the hold fits what the database has free. What is short (the account's money,
      // the key's allowance) may sit unused in leases: this instance's own goes back at once,
      // the others' are recalled — asked again at each try, since a top-up another instance had
      // in flight lands after the first recall. Nothing leased anywhere: refused now, as on SQLite.
      const creditShort = int(row.available ?? "0") < g.amount;
      const keyShort = row.key_limit !== null && row.key_available !== null && int(row.key_available) < g.amount;
      const mine = { credit: this.leases.free("credit", g.accountId, book), key: keyId ? this.leases.free("key", keyId, book) : 0 };
      // Grants of this instance answered by the database but not heard here yet lease it more.
      const others = [...(this.pending.get(g.accountId) ?? [])].filter((p) => p !== asked);
      if (others.length > 0) {
        await Promise.allSettled(others);
        if (this.fromLease(g, book)) return { ok: true, direct: false };
        continue;
      }
      const hopeless = (creditShort && int(row.others_leased ?? "0") <= 0 && mine.credit <= 0) || (keyShort && int(row.key_others_leased ?? "0") <= 0 && mine.key <= 0);
      if (hopeless) return refusal(row, g.amount, mine);
      if (!ownBack && ((creditShort && mine.credit > 0) || (keyShort && mine.key > 0))) {
        ownBack = true;
        if (creditShort && mine.credit > 0) await this.recalled(`credit:${g.accountId}`);
        if (keyShort && mine.key > 0) await this.recalled(`key:${keyId}`);
        continue;
      }
      await this.recall(g);
      if (Date.now() + pause > deadline) return refusal(row, g.amount, mine);
      await Bun.sleep(pause);
      pause = Math.min(pause * 2, 100);
    }
  }

  /** One switchyard_grant: `want` of a lease (Infinity: never lease — the CLI, or no journal), else the direct path. */
  private async askGrant(g: GrantRequest, want: number, wantKey: number): Promise<GrantRow> {
    const p = periodStarts((g.createdAt ?? nowSeconds()) * 1000);
    const wantA = Number.isFinite(want) ? want : Number.MAX_SAFE_INTEGER;
    const [row] = (await this.db.run((sql) => sql`
      SELECT mode, granted, key_granted, available, key_available, key_limit, others_leased, key_others_leased FROM switchyard_grant(
        ${this.instance.id}, ${g.requestId || null}, ${g.accountId}, ${g.amount}, ${wantA}, ${g.endpoint}, ${g.model}, ${g.createdAt ?? nowSeconds()},
        ${g.key?.id ?? null}, ${wantKey}, ${p.day}, ${p.week}, ${p.month})`, this.db.answerTimeoutMs)) as GrantRow[];
    return row!;
  }

  /** Asks every instance to give back what it leases of this account (and key). */
  private async recall(g: GrantRequest): Promise<void> {
    const subjects = [`credit:${g.accountId}`, ...(g.key ? [`key:${g.key.id}`] : [])];
    await this.db.run((sql) => sql`SELECT pg_notify(${RECALL_CHANNEL}, s) FROM unnest(${sql.array(subjects, "TEXT")}::TEXT[]) AS s`).catch(() => {});
  }

  /** Another instance could not fit a hold: give back what this one leases of it and does not use. */
  async recalled(subject: string): Promise<void> {
    const at = subject.indexOf(":");
    const kind = subject.slice(0, at) as LeaseKind;
    const id = subject.slice(at + 1);
    if ((kind !== "credit" && kind !== "key") || !this.book) return;
    const amount = this.leases.recall(kind, id, this.book);
    if (amount > 0) await this.giveBack([{ kind, subject: id, amount }]).catch(() => {});
  }

  private async returnIdle(): Promise<void> {
    if (!this.book) return;
    const items = this.leases.idle(LEASE_IDLE_MS, this.book);
    if (items.length > 0) await this.giveBack(items).catch(() => {});
  }

  /** Gives back every lease, less what requests still hold (a clean stop; never rejects). */
  async returnAll(): Promise<void> {
    if (!this.book) return;
    const items = this.leases.all(this.book);
    if (items.length > 0) await this.giveBack(items).catch(() => {});
  }

  /** Gives leases back; an answer lost counts as given back (the mirror stays on the safe side). */
  private async giveBack(items: { kind: LeaseKind; subject: string; amount: number }[]): Promise<void> {
    for (const it of items) this.leases.returned(it.kind, it.subject, it.amount);
    await this.db.run((sql) => sql`SELECT returned FROM switchyard_lease_return(${this.instance.id}, ${items}::json)`);
  }
}

/** A 402's figures: by the key's limit when that is what is short, else by the account's balance. */
function refusal(row: GrantRow, amount: number, mine: { credit: number; key: number }): GrantResult {
  if (row.key_limit !== null && row.key_available !== null && int(row.key_available) < amount && int(row.available ?? "0") >= amount) {
    return { ok: false, available: Math.max(0, int(row.key_available) + Math.max(0, mine.key)), keyLimit: int(row.key_limit) };
  }
  return { ok: false, available: Math.max(0, int(row.available ?? "0") + Math.max(0, mine.credit)) };
}
