/**
 * Shared setup for the ledger's tests (ledger.test.ts, ledger-lifecycle.test.ts): a ledger over a
 * real SQLite store in a fresh data directory per test, accounts and holds to drive it, and reads
 * of what the store holds. Each test file calls setUp() before and tearDown() after every test;
 * the store and ledger below are live bindings, replaced by each setUp() and open().
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { SqliteLedgerStore } from "../store/sqlite/ledger-store";
import type { FsyncFn } from "../store/sqlite/wal-sync";
import { Log } from "../log";
import { Ledger } from "./ledger";
import type { Consumption } from "./ledger-store";

export class CapturingLog extends Log {
  readonly lines: Record<string, unknown>[] = [];
  constructor() {
    super("silent");
  }
  override warn(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: "warn", msg, ...fields });
  }
  override error(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: "error", msg, ...fields });
  }
}

export let dir: string;
export let db: Store;
export let store: SqliteLedgerStore;
export let ledger: Ledger;
export let log: CapturingLog;

/**
 * A WAL sync that succeeds without touching the disk: these tests are about the ledger's logic,
 * and a busy shared disk would only make them slow (the end-to-end tests sync for real).
 */
const syncedInMemory: FsyncFn = (_fd, cb) => setImmediate(() => cb(null));
let fsync: FsyncFn = syncedInMemory;

/** Opens the store in `dir` (again, after a simulated crash) and a ledger over it. */
export function open(lockWaitMs = 150) {
  db = openStore(dir, { busyTimeoutMs: 0 });
  store = new SqliteLedgerStore(db, { lockWaitMs, fsync });
  log = new CapturingLog();
  ledger = new Ledger(store, log);
}

/** Before each test: a fresh data directory, opened with `sync` as its WAL fsync (open() keeps it). */
export function setUp(sync: FsyncFn = syncedInMemory) {
  dir = mkdtempSync(join(tmpdir(), "sy-ledger-"));
  fsync = sync;
  open();
}

/** After each test: closes the ledger and its store, and removes the data directory. */
export function tearDown() {
  ledger.close();
  store.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

/** 1 unit per input token, 2 per output token, 3 per character. */
export const price = (u: Consumption) => (u.inputTokens ?? 0) + 2 * (u.outputTokens ?? 0) + 3 * (u.characters ?? 0);
let seq = 0;
/** The next number for an account or request id, unique across the tests. */
export const nextSeq = () => ++seq;
export async function account(credits: number): Promise<string> {
  const id = `acct_${++seq}`;
  await ledger.openAccount({ id, name: "t", createdAt: 1 }, credits, "seed");
  return id;
}
export const reserve = (accountId: string, budget: Consumption, requestId = `req_${++seq}`) =>
  ledger.reserve({ requestId, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price });

/** The balance on disk, and what the ledger holds for the account in memory. */
export const row = (id: string) => ({ balance: (db.query("SELECT balance FROM accounts WHERE id = ?").get(id) as { balance: number }).balance, reserved: ledger.held(id) });
export const entrySum = (id: string) => (db.query("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ?").get(id) as { s: number }).s;
