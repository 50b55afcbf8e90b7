/**
 * A failed fsync of the SQLite ledger is final (issue: the same WAL descriptor was synced again
 * and a later probe marked the store healthy, although what the failed fsync covered may never
 * reach the disk). The writes that waited for it are not acknowledged, nothing is written after
 * it, and the server stops with one log line; a restart reads the database from the disk.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { startHarness, ADMIN_TOKEN, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";
import type { StoreUnavailable } from "../src/billing/ledger-store";

let fake: FakeUpstream;
beforeAll(() => {
  fake = startFakeUpstream();
});
afterAll(() => fake.stop());

const WORDS = Array.from({ length: 8 }, (_, i) => ` w${i}`);

describe("in process", () => {
  let h: Harness;
  let fsyncFails = false;
  let fsyncs = 0;
  const stops: StoreUnavailable[] = [];
  beforeAll(async () => {
    h = await startHarness(
      { SWITCHYARD_UPSTREAM_URL: fake.url },
      {
        ledger: {
          fsync: (fd, cb) => {
            fsyncs++;
            if (fsyncFails) cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
            else require("node:fs").fsync(fd, cb);
          },
        },
        stopAfterStoreFailure: (e) => void stops.push(e),
      },
    );
  });
  afterAll(() => h.stop());

  test("the charge waiting for it is not acknowledged; the store never becomes healthy again on that connection", async () => {
    const acct = await h.account(10);
    fake.behave({ words: WORDS, beforeFinish: () => void (fsyncFails = true) });
    const res = await chat(h, acct.key, { stream: true, stream_options: { include_usage: true } });
    const text = await res.text();
    // Not told it completed (its charge is not known to be on disk), nor that it was not billed
    // (the charge was committed and may well be on disk).
    expect(text).not.toContain("[DONE]");
    expect(text).toContain('"code":"service_unavailable"');
    expect(text).not.toContain("not billed");
    expect(stops.map((e) => e.reason)).toEqual(["io"]);
    const syncedSoFar = fsyncs;
    // The disk answers again and the probe interval passes: still refused, and never synced again.
    fsyncFails = false;
    fake.behave({ words: WORDS });
    await Bun.sleep(600);
    for (let i = 0; i < 3; i++) expect((await chat(h, acct.key)).status).toBe(503);
    expect(h.server.services.ledger.storeUnavailable).toBe(true);
    expect(fsyncs).toBe(syncedSoFar);
    expect(stops).toHaveLength(1);
  });
});

describe("as its own process", () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "switchyard-fsync-"));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  async function start(flag: string) {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "support/fsync-failing-server.ts")], {
      env: {
        ...process.env, PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
        SWITCHYARD_LOG_LEVEL: "error", SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MODELS_DIR: join(dataDir, "models"), FSYNC_FAILS_WHEN: flag,
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const reader = proc.stdout.getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`server did not start: ${await new Response(proc.stderr).text()}`);
      out += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    return { proc, url: JSON.parse(out.split("\n")[0]!).url as string };
  }
  const admin = (url: string, method: string, path: string, body?: unknown) =>
    fetch(url + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

  test("stops with one log line; restarted, the ledger is exact", async () => {
    const flag = join(dataDir, "fsync-fails");
    const { proc, url } = await start(flag);
    const a = (await (await admin(url, "POST", "/admin/accounts", { name: "f", credits: 10 })).json()) as { id: string };
    const k = (await (await admin(url, "POST", `/admin/accounts/${a.id}/keys`, { name: "k" })).json()) as { key: string };
    writeFileSync(flag, "");
    fake.behave({ words: WORDS });
    // The request's charge meets the failing fsync; the process stops (the answer may not arrive).
    await chat(url, k.key).then((r) => r.text()).catch(() => "");
    expect(await proc.exited).toBe(1);
    // Besides the start-up line (written at every level), the stop is one line.
    const lines = (await new Response(proc.stderr).text()).trim().split("\n").filter((l) => !l.includes('"msg":"listening"'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).msg ?? lines[0]).toContain("could not be synced to disk; stopping");
    // Restarted on the same directory, the database is read from the disk: no hold left pending,
    // and the entries add up to the balance (the charge is there or it is not, never half).
    rmSync(flag);
    const again = await start(flag);
    try {
      expect((await chat(again.url, k.key)).status).toBe(200);
    } finally {
      again.proc.kill("SIGTERM");
      await again.proc.exited;
    }
    const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
    try {
      const acct = db.query("SELECT balance, reserved FROM accounts WHERE id = ?").get(a.id) as { balance: number; reserved: number };
      const sum = (db.query("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ?").get(a.id) as { s: number }).s;
      const pending = (db.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'").get() as { n: number }).n;
      expect(acct.reserved).toBe(0);
      expect(pending).toBe(0);
      expect(sum).toBe(acct.balance);
    } finally {
      db.close();
    }
  }, 60_000);
});
