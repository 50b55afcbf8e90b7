/**
 * The metered call and the metered stream over a real ledger (SQLite): every path charges at
 * most once and releases in its finally — a whole call whose work throws, a stream start that
 * fails, a stream that completes (its closing bytes only after the charge), one whose client left
 * after taking part of it (charged for what its connection took), and one whose source fails
 * (released, told "not billed").
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { SqliteLedgerStore } from "../store/sqlite/ledger-store";
import { Ledger } from "../billing/ledger";
import { Log } from "../log";
import { DomainError, midStreamFailure } from "../errors";
import type { Consumption } from "../billing/ledger-store";
import { meterWhole, openMetered, type CallOutcome, type CallSpec } from "./metered-call";
import { runMeteredStream, type MeteredOut, type MeteredSource, type StreamEnding } from "./metered-stream";
import { producerStream } from "./producer-stream";

let dir: string;
let db: Store;
let store: SqliteLedgerStore;
let ledger: Ledger;
const log = new Log("silent");

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "sy-metered-"));
  db = openStore(dir, { busyTimeoutMs: 0 });
  store = new SqliteLedgerStore(db, { fsync: (_fd, cb) => setImmediate(() => cb(null)) });
  ledger = new Ledger(store, log);
  await ledger.openAccount({ id: "acct", name: "a", createdAt: 0 }, 1_000_000, "seed");
});
afterEach(() => {
  ledger.close();
  store.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
/** 1 unit per input token, 2 per output token; the hold covers 100 + 100. */
const spec = (): CallSpec => ({
  requestId: `req_${++n}`, accountId: "acct", endpoint: "/v1/chat/completions", model: "m", serviceTier: "default",
  budget: { inputTokens: 100, outputTokens: 100 }, price: (u) => (u.inputTokens ?? 0) + 2 * (u.outputTokens ?? 0),
});
const balance = () => (db.query("SELECT balance, reserved FROM accounts WHERE id = 'acct'").get() as { balance: number; reserved: number });
const charges = () => (db.query("SELECT COUNT(*) AS n FROM ledger_entries WHERE kind = 'charge'").get() as { n: number }).n;

test("a whole call is charged what its work reports, once, and its outcome recorded", async () => {
  const outcomes: CallOutcome[] = [];
  const { value, settlement } = await meterWhole(ledger, spec(), async (call) => {
    expect(call.quote({ inputTokens: 10, outputTokens: 5 }).amount).toBe(20);
    return { usage: { inputTokens: 10, outputTokens: 5 }, value: "answer" };
  }, (o) => outcomes.push(o));
  expect(value).toBe("answer");
  expect(settlement.charged).toBe(20);
  expect(balance()).toEqual({ balance: 1_000_000 - 20, reserved: 0 });
  expect(outcomes).toEqual([{ charged: 20 }]);
});

test("a whole call whose work throws is released, not charged, and the error passes through", async () => {
  const outcomes: CallOutcome[] = [];
  const boom = new DomainError("upstream_failed", "upstream_error", "no");
  await expect(meterWhole(ledger, spec(), async () => { throw boom; }, (o) => outcomes.push(o))).rejects.toBe(boom);
  expect(charges()).toBe(0);
  expect(balance().reserved).toBe(0);
  expect(outcomes).toEqual([{ released: true, voided: true }]);
});

test("a streamed call whose start fails is released before the error is rethrown", async () => {
  await expect(openMetered(ledger, spec(), async () => { throw new Error("no upstream"); })).rejects.toThrow("no upstream");
  expect(balance().reserved).toBe(0);
  expect(ledger.pendingHolds()).toBe(0);
});

test("a call the account cannot cover is refused before any work", async () => {
  let worked = false;
  const big = { ...spec(), budget: { inputTokens: 2_000_000 } };
  await expect(meterWhole(ledger, big, async () => { worked = true; return { usage: {}, value: 1 }; })).rejects.toMatchObject({ code: "insufficient_credits" });
  expect(worked).toBe(false);
});

/** A source double: writes `parts` (each 10 bytes carrying 1 unit), then ends as told. */
function source(parts: number, end: "completed" | "failed", usage: Consumption = { inputTokens: 10, outputTokens: parts }) {
  const seen: { untaken?: number; voided?: boolean; written: number } = { written: 0 };
  const src: MeteredSource = {
    async run(out: MeteredOut): Promise<StreamEnding> {
      for (let i = 0; i < parts && !out.closed; i++) {
        out.write(new Uint8Array(10).fill(65 + i), 1);
        seen.written++;
        const room = out.ready();
        if (room) await room;
      }
      if (end === "failed") return { kind: "failed", error: new Error("upstream broke") };
      return { kind: "completed", usage, closing: new TextEncoder().encode("END") };
    },
    async deliveredUsage(untaken) {
      seen.untaken = untaken;
      const delivered = seen.written - untaken;
      return delivered > 0 ? { inputTokens: 10, outputTokens: delivered } : null;
    },
    failure(_e, voided) {
      seen.voided = voided;
      return midStreamFailure(voided);
    },
    failedBytes: (e) => new TextEncoder().encode(`ERR ${e.message}`),
  };
  return { src, seen };
}

async function stream(parts: number, end: "completed" | "failed", highWaterBytes = 1 << 20) {
  const { call, stream: s } = await openMetered(ledger, spec(), async () => source(parts, end));
  let done!: Promise<void>;
  const body = producerStream({ highWaterBytes, onCancel: () => {}, produce: (w) => (done = runMeteredStream(call, w, s.src, log)) });
  return { body, seen: s.seen, done: () => done };
}

test("a completed stream is charged its usage, and its closing bytes come only after the charge", async () => {
  const { body, done } = await stream(3, "completed");
  const text = await new Response(body).text();
  await done();
  expect(text).toBe("A".repeat(10) + "B".repeat(10) + "C".repeat(10) + "END");
  expect(charges()).toBe(1);
  expect(balance()).toEqual({ balance: 1_000_000 - 16, reserved: 0 });
});

test("a client that leaves pays for what its connection took, not what was still queued for it", async () => {
  // High-water 15 bytes: the source waits after each 10-byte write until the client reads.
  const { body, seen, done } = await stream(10, "completed", 15);
  const reader = body.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel();
  await done();
  // Each read let one more write in: four written, two taken; the source stops once it sees the client gone.
  expect(seen.written).toBe(4);
  expect(seen.untaken).toBe(2);
  expect(balance()).toEqual({ balance: 1_000_000 - (10 + 2 * 2), reserved: 0 });
});

test("a client that took nothing pays nothing", async () => {
  const { body, done } = await stream(10, "completed", 5);
  await body.cancel();
  await done();
  expect(charges()).toBe(0);
  expect(balance().reserved).toBe(0);
});

test("a failed source is released, and the client is told it was not billed", async () => {
  const { body, seen, done } = await stream(2, "failed");
  const text = await new Response(body).text();
  await done();
  expect(seen.voided).toBe(true);
  expect(text.endsWith("ERR The model backend failed mid-stream. This request was not billed.")).toBe(true);
  expect(charges()).toBe(0);
  expect(balance()).toEqual({ balance: 1_000_000, reserved: 0 });
});
