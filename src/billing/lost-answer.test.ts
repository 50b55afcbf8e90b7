/**
 * A settle whose charge was written but whose answer was lost (the connection to the database
 * dropped after the commit): the request is charged — settle() resolves with the first charge,
 * release() never says "voided", the charge exists once — and when even the void could not be
 * written at first, the client is told neutrally, never "not billed". Over both real stores; the
 * lost answer is a thin wrapper that lets the real post commit, then rejects as a dropped
 * connection does.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { SqliteLedgerStore } from "../store/sqlite/ledger-store";
import { Log } from "../log";
import { DomainError } from "../errors";
import { Ledger } from "./ledger";
import { StoreUnavailable, type LedgerStore, type PostRequest, type PostResult } from "./ledger-store";
import type { Consumption } from "./ledger-store";
import { pgFixture, type PgFixture } from "../../test/support/postgres-store";
import { describeEachStore, type TestStore } from "../../test/support/stores";

class CapturingLog extends Log {
  readonly warnings: string[] = [];
  constructor() {
    super("silent");
  }
  override warn(msg: string) {
    this.warnings.push(msg);
  }
}

/** The real store, except that the next post's answer (or void) can be lost after it committed. */
function losing(inner: LedgerStore) {
  const faults = { losePost: false, failVoid: false };
  const store: LedgerStore = {
    grant: (g, book) => inner.grant(g, book),
    post: (p: PostRequest, committed?: () => void): Promise<PostResult> => {
      const r = inner.post(p, committed);
      if (!faults.losePost) return r;
      faults.losePost = false;
      return r.then(() => Promise.reject(new StoreUnavailable("unreachable", "connection closed after the commit")));
    },
    voidDirect: inner.voidDirect && ((id) => {
      if (!faults.failVoid) return inner.voidDirect!(id);
      faults.failVoid = false;
      return Promise.reject(new StoreUnavailable("unreachable", "connection refused"));
    }),
    adjust: (a, n, r, book) => inner.adjust(a, n, r, book),
    createAccount: (a, c, r) => inner.createAccount(a, c, r),
    releaseAbandoned: () => inner.releaseAbandoned(),
    expireHolds: (before) => inner.expireHolds(before),
    pendingHolds: () => inner.pendingHolds(),
    entries: (a, n) => inner.entries(a, n),
  };
  return { store, faults };
}

const price = (u: Consumption) => (u.inputTokens ?? 0) + 2 * (u.outputTokens ?? 0);

describeEachStore("a charge whose answer was lost", (kind: TestStore) => {
  let inner: LedgerStore;
  let cleanup: () => Promise<void>;
  let seq = 0;

  beforeAll(async () => {
    if (kind === "sqlite") {
      const dir = mkdtempSync(join(tmpdir(), "sy-lost-"));
      const db: Store = openStore(dir, { busyTimeoutMs: 0 });
      const s = new SqliteLedgerStore(db, { fsync: (_fd, cb) => setImmediate(() => cb(null)) });
      inner = s;
      cleanup = async () => {
        s.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      };
    } else {
      const f: PgFixture = await pgFixture();
      inner = f.a.ledger;
      cleanup = () => f.close();
    }
  }, 60_000);
  afterAll(() => cleanup());

  async function setup() {
    const { store, faults } = losing(inner);
    const log = new CapturingLog();
    const ledger = new Ledger(store, log, { probeIntervalMs: 1 });
    const charges: number[] = [];
    ledger.onSettled((c) => charges.push(c.charged));
    const accountId = `acct_lost_${kind}_${++seq}`;
    await ledger.openAccount({ id: accountId, name: "t", createdAt: 1 }, 10_000, "seed");
    const hold = await ledger.reserve({ requestId: `req_lost_${kind}_${seq}`, accountId, endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: 100, outputTokens: 100 }, price });
    return { ledger, faults, log, charges, accountId, hold };
  }

  test("settle resolves with the charge it wrote; release says nothing was voided; charged once", async () => {
    const { ledger, faults, log, charges, accountId, hold } = await setup();
    faults.losePost = true;
    const settlement = await hold.settle({ inputTokens: 10, outputTokens: 20, serviceTier: "default" });
    expect(settlement.charged).toBe(50);
    expect(await hold.release()).toBe(false);
    expect(hold.status).toBe("posted");
    const entries = await ledger.entries(accountId);
    expect(entries.filter((e) => e.kind === "charge").map((e) => e.amount)).toEqual([-50]);
    expect(entries[0]!.balance_after).toBe(10_000 - 50);
    expect(charges).toEqual([50]);
    expect(ledger.pendingHolds()).toBe(0);
    expect(await inner.pendingHolds()).toBe(0);
    expect(log.warnings.some((w) => w.includes("the request is charged"))).toBe(true);
    ledger.close();
  });

  // Only a store that writes holds (PostgreSQL's direct path) has a void to fail; a hold booked in
  // memory is released without a write.
  test.if(kind === "postgres")("when the void cannot be written either, the client is told neutrally, and the charge stands", async () => {
    const { ledger, faults, log, accountId, hold } = await setup();
    faults.losePost = true;
    faults.failVoid = true;
    const e = await hold.settle({ inputTokens: 10, outputTokens: 20, serviceTier: "default" }).catch((err) => err);
    expect(e).toBeInstanceOf(DomainError);
    expect(e.code).toBe("service_unavailable");
    expect(e.message).not.toContain("not billed");
    expect(await hold.release()).toBe(false);
    await Bun.sleep(5);
    await ledger.retryVoidsNow();
    expect(ledger.queuedVoids()).toBe(0);
    expect(ledger.pendingHolds()).toBe(0);
    const entries = await ledger.entries(accountId);
    expect(entries.filter((x) => x.kind === "charge").map((x) => x.amount)).toEqual([-50]);
    expect(log.warnings.some((w) => w.includes("reported as failed had been written"))).toBe(true);
    ledger.close();
  });
});
