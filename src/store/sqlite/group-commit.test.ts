import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { GroupCommit } from "./group-commit";

let dir: string;
let db: Database;
let commits: GroupCommit;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "group-commit-"));
  db = new Database(join(dir, "t.db"), { create: true, strict: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = FULL");
  db.run("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL CHECK (v >= 0))");
  db.run("CREATE TABLE counter (n INTEGER NOT NULL)");
  db.run("INSERT INTO counter VALUES (0)");
  commits = new GroupCommit(db);
});

afterEach(() => {
  commits.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (k: string, v: number) => () => {
  // Two statements: a write that fails on the second must leave nothing of the first behind.
  db.run("UPDATE counter SET n = n + 1");
  db.run("INSERT INTO t (k, v) VALUES (?, ?)", [k, v]);
  return k;
};
const counter = () => (db.query("SELECT n FROM counter").get() as { n: number }).n;
const keys = () => (db.query("SELECT k FROM t ORDER BY k").all() as { k: string }[]).map((r) => r.k);

describe("group commit", () => {
  test("writes queued in one turn share one transaction, with no second run", async () => {
    const results = await Promise.all([commits.submit(insert("a", 1)), commits.submit(insert("b", 2), "commit"), commits.submit(insert("c", 3))]);
    expect(results).toEqual(["a", "b", "c"]);
    expect(commits.batches).toBe(1);
    expect(commits.replays).toBe(0);
    expect(keys()).toEqual(["a", "b", "c"]);
    expect(counter()).toBe(3);
  });

  test("a write that breaks a rule fails alone: its partial changes are undone, the others in its batch commit", async () => {
    const outcomes = await Promise.allSettled([
      commits.submit(insert("a", 1)),
      // The counter update succeeds, then the CHECK constraint fails.
      commits.submit(insert("bad", -1)),
      commits.submit(insert("b", 2), "commit"),
      // A repeated key: the primary key refuses it.
      commits.submit(insert("a", 5)),
      commits.submit(insert("c", 3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/CHECK constraint/);
    expect(String((outcomes[3] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint/);
    // One batch, run a second time with a savepoint per write.
    expect(commits.batches).toBe(1);
    expect(commits.replays).toBe(1);
    expect(keys()).toEqual(["a", "b", "c"]);
    // Only the three writes that succeeded counted.
    expect(counter()).toBe(3);
    expect(db.inTransaction).toBe(false);
  });

  test("a write that throws before writing anything still leaves the rest of its batch committed", async () => {
    const outcomes = await Promise.allSettled([
      commits.submit(insert("a", 1)),
      commits.submit(() => {
        throw new RangeError("refused by its own rule");
      }),
      commits.submit(insert("b", 2)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(keys()).toEqual(["a", "b"]);
    expect(counter()).toBe(2);
  });
});

describe("state a batch's writes build in memory (BatchState)", () => {
  /** Sums what the writes add and writes the sum to the counter once, as charge-batch.ts does balances. */
  function summing() {
    let pending = 0;
    const log: string[] = [];
    const state = {
      flush() {
        log.push(`flush ${pending}`);
        if (pending > 100) throw new RangeError("the sum breaks a rule");
        db.run("UPDATE counter SET n = n + ?", [pending]);
        pending = 0;
      },
      discard() {
        log.push("discard");
        pending = 0;
      },
    };
    return { state, log, add: (v: number) => () => ((pending += v), v) };
  }

  test("is written once, just before the batch commits", async () => {
    commits.close();
    const s = summing();
    commits = new GroupCommit(db, { batchState: s.state });
    expect(await Promise.all([commits.submit(s.add(1)), commits.submit(s.add(2)), commits.submit(s.add(3))])).toEqual([1, 2, 3]);
    expect(s.log).toEqual(["flush 6"]);
    expect(counter()).toBe(6);
  });

  test("a flush that throws fails only the write that made it break, after a replay with a flush per write", async () => {
    commits.close();
    const s = summing();
    commits = new GroupCommit(db, { batchState: s.state });
    const outcomes = await Promise.allSettled([commits.submit(s.add(1)), commits.submit(s.add(500)), commits.submit(s.add(3))]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(commits.replays).toBe(1);
    // The whole batch's flush threw and was discarded; the replay flushed after each write.
    expect(s.log).toEqual(["flush 504", "discard", "flush 1", "flush 500", "discard", "flush 3"]);
    expect(counter()).toBe(4);
  });
});

describe("a failed fsync is final", () => {
  /** An fsync that fails once with EIO, then would succeed: as Linux reports a lost write-back once. */
  function failingOnce() {
    const calls: number[] = [];
    let failed = false;
    const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      calls.push(fd);
      if (failed) return require("node:fs").fsync(fd, cb);
      failed = true;
      cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
    };
    return { fsync, calls };
  }

  test("the writes that waited for it are refused, nothing later is written or synced, and the owner hears it once", async () => {
    commits.close();
    const { fsync, calls } = failingOnce();
    const fatal: string[] = [];
    const failures: string[] = [];
    commits = new GroupCommit(db, { fsync, onFatal: (e) => fatal.push(e.reason), onFailure: (e) => failures.push(e.reason) });
    // The first durable write's fsync fails: it was committed, but it is not acknowledged.
    const first = await Promise.allSettled([commits.submit(insert("a", 1)), commits.submit(insert("b", 2))]);
    expect(first.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect((first[0] as PromiseRejectedResult).reason.reason).toBe("io");
    expect(fatal).toEqual(["io"]);
    expect(failures).toEqual(["io"]);
    expect(commits.failedFatally?.reason).toBe("io");
    // No return to healthy on the same descriptor: every later write is refused unwritten, and the
    // descriptor is never synced again (the next fsync would have succeeded).
    const later = await Promise.allSettled([commits.submit(insert("c", 3)), commits.submit(insert("d", 4), "commit")]);
    expect(later.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(calls).toHaveLength(1);
    expect(keys()).toEqual(["a", "b"]);
    // Shutdown does not sync it either.
    commits.close();
    expect(calls).toHaveLength(1);
    expect(fatal).toEqual(["io"]);
  });

  test("writes queued behind the failed fsync are refused too, never acknowledged by a later one", async () => {
    commits.close();
    let release = null as (() => void) | null;
    const calls: number[] = [];
    // The first fsync is held until the second batch waits behind it, then fails.
    const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      calls.push(fd);
      if (calls.length === 1) release = () => cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
      else require("node:fs").fsync(fd, cb);
    };
    let fatal = 0;
    commits = new GroupCommit(db, { fsync, onFatal: () => fatal++ });
    const a = commits.submit(insert("a", 1));
    while (release === null) await Bun.sleep(1);
    const b = commits.submit(insert("b", 2));
    // b's batch commits and waits for the next fsync.
    while (commits.batches < 2) await Bun.sleep(1);
    release!();
    const outcomes = await Promise.allSettled([a, b]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(calls).toHaveLength(1);
    expect(fatal).toBe(1);
  });
});
