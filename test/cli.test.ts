/**
 * The command line's store commands as a real subprocess against a temporary data directory: the
 * same operations as the admin API, JSON out or tables, and bad input as one line and a non-zero
 * exit that changes nothing. Configuration, models, version, doctor, start-up and healthcheck:
 * test/cli-operations.test.ts.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { startHarness } from "./support/harness";
import { BUN, ROOT, useCliDataDir } from "./support/cli-process";

const { dataDir, cliAsync, cli } = useCliDataDir();

/** Every ledger entry and account row, read straight from the file: what a failed command must not change. */
function snapshot(): string {
  const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
  try {
    return JSON.stringify([db.query("SELECT * FROM ledger_entries ORDER BY id").all(), db.query("SELECT * FROM accounts ORDER BY id").all()]);
  } finally {
    db.close();
  }
}

describe("administration commands", () => {
  let accountId = "";
  let keyId = "";
  let key = "";

  test("accounts create with credits prints the account with exact USD", () => {
    const r = cli(["accounts", "create", "acme", "--credits", "12.5"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ name: "acme", balance: 12.5, reserved: 0, disabled: false });
    accountId = r.json.id;
    expect(accountId).toMatch(/^acct_/);
  });

  test("keys create prints the key once; keys list shows the prefix only", () => {
    const r = cli(["keys", "create", accountId, "--name", "ci"]);
    expect(r.code).toBe(0);
    expect(r.json.key.startsWith(r.json.prefix)).toBe(true);
    keyId = r.json.id;
    key = r.json.key;
    const list = cli(["keys", "list", accountId, "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(key);
    expect(list.json.data[0]).toMatchObject({ id: keyId, prefix: r.json.prefix, revoked: false });
  });

  test("credits add and deduct, then accounts show and the ledger agree", () => {
    expect(cli(["credits", "add", accountId, "2.5", "--reason", "bonus"]).json.balance).toBe(15);
    expect(cli(["credits", "deduct", accountId, "0.000123", "--reason", "fix"]).json.balance).toBe(14.999877);
    const show = cli(["accounts", "show", accountId]);
    expect(show.code).toBe(0);
    expect(show.json.balance).toBe(14.999877);
    const ledger = cli(["ledger", accountId, "--json"]);
    expect(ledger.json.data.map((e: any) => [e.amount, e.reason])).toEqual([
      [-0.000123, "fix"],
      [2.5, "bonus"],
      [12.5, "initial credits"],
    ]);
  });

  test("the server sees what the CLI wrote: the key works, then a revoke stops it", async () => {
    const h = await startHarness({ SWITCHYARD_DATA_DIR: dataDir });
    try {
      const ask = () =>
        fetch(h.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
      expect((await ask()).status).toBe(400); // authenticated, then the empty body was judged
      const revoked = cli(["keys", "revoke", keyId]);
      expect(revoked.code).toBe(0);
      expect(revoked.json).toMatchObject({ id: keyId, revoked: true });
      expect((await ask()).status).toBe(401);
    } finally {
      await h.server.stop(); // keep dataDir: afterAll removes it
    }
  });

  test("keys create and update take the key controls (the admin API's fields and rules)", () => {
    const c = cli(["keys", "create", accountId, "--name", "capped", "--limit", "2.5", "--limit-reset", "daily", "--models", "glm-4.6,minimax-m2", "--rate-limit-rpm", "30"]);
    expect(c.stderr).toBe("");
    expect(c.json).toMatchObject({ name: "capped", limit: 2.5, limit_reset: "daily", models: ["glm-4.6", "minimax-m2"], rate_limit_rpm: 30, expires_at: null });
    const u = cli(["keys", "update", c.json.id, "--limit", "none", "--expires-at", "2030-01-01T00:00:00Z", "--models", "all", "--rate-limit-rpm", "none"]);
    expect(u.code).toBe(0);
    expect(u.json).toMatchObject({ id: c.json.id, limit: null, limit_reset: "daily", models: null, rate_limit_rpm: null, expires_at: "2030-01-01T00:00:00.000Z" });
    const bad = cli(["keys", "update", c.json.id, "--limit-reset", "hourly"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("limit_reset");
  });

  test("accounts update and list", () => {
    const u = cli(["accounts", "update", accountId, "--disabled", "true", "--rate-limit-rpm", "60"]);
    expect(u.code).toBe(0);
    expect(u.json).toMatchObject({ disabled: true, rate_limit_rpm: 60 });
    const list = cli(["accounts", "list", "--json"]);
    expect(list.json.data.map((a: { id: string }) => a.id)).toContain(accountId);
  });

  test("--help lists the commands", () => {
    const r = cli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["accounts create", "keys create", "keys revoke", "credits add", "credits deduct", "accounts show"]) expect(r.stdout).toContain(c);
  });

  test("--help after a command prints its usage, with every option it takes; nothing is run", () => {
    for (const args of [["accounts", "create", "--help"], ["accounts", "create", "-h"], ["accounts", "create", "bob", "--credits", "5", "--help"]]) {
      const r = cli(args);
      expect(r.code).toBe(0);
      expect(r.stdout.split("\n")[0]).toBe("usage: switchyard accounts create <name> [--credits USD] [--json]");
    }
    expect(cli(["accounts", "list", "--json"]).json.data.map((a: { name: string }) => a.name)).not.toContain("bob");
    expect(cli(["catalog", "update", "--help"]).stdout).toContain("[--input-price USD] [--output-price USD]");
  });
});

describe("bad input", () => {
  const cases: [string[], string][] = [
    [["credits", "add", "ACCOUNT", "0"], "amount"],
    [["credits", "add", "ACCOUNT", "abc"], "amount"],
    [["credits", "add", "ACCOUNT", "0.0000000001"], "amount"],
    [["credits", "add", "ACCOUNT", "-5"], "USD"],
    [["credits", "deduct", "ACCOUNT", "100000"], "amount"],
    [["accounts", "update", "ACCOUNT", "--concurrency-limit", "0"], "concurrency_limit"],
    [["accounts", "update", "ACCOUNT", "--rate-limit-rpm", "-3"], "rate_limit_rpm"],
    [["accounts", "create", "x", "--credits", "-1"], "credits"],
    [["accounts", "show", "acct_nope"], "acct_nope"],
    [["keys", "create"], "<account-id>"],
    [["frobnicate"], "unknown command"],
    // Options are parsed strictly: an unknown one, a missing or malformed value, one given twice.
    [["accounts", "create", "alice", "--credts", "25"], "unknown option '--credts'"],
    [["accounts", "create", "alice", "--credits"], "--credits needs a value"],
    [["accounts", "create", "alice", "--credits", "--json"], "--credits needs a value"],
    [["accounts", "update", "ACCOUNT", "--disabled", "maybe"], "--disabled must be true or false"],
    [["accounts", "update", "ACCOUNT", "--concurrency-limit", "lots"], "--concurrency-limit must be a whole number or 'default'"],
    [["credits", "add", "ACCOUNT", "1", "--reason", "a", "--reason", "b"], "--reason is given twice"],
    [["keys", "list", "ACCOUNT", "--json=yes"], "--json takes no value"],
    [["ledger", "ACCOUNT", "--limit", "5"], "unknown option '--limit'"],
    [["-x"], "unknown option '-x'"],
  ];
  let before = "";
  let after = "";
  let results: Awaited<ReturnType<typeof cliAsync>>[] = [];
  beforeAll(async () => {
    const id = cli(["accounts", "create", "bad-input", "--credits", "5"]).json.id as string;
    before = snapshot();
    // Subprocesses are slow to start; run the independent failures side by side.
    results = await Promise.all(cases.map(([args]) => cliAsync(args.map((a) => (a === "ACCOUNT" ? id : a)))));
    after = snapshot();
  }, 120_000); // twenty processes at once on a loaded machine: a bound for liveness only

  test.each(cases.map((c, i) => [c[0].join(" "), c[1], i] as const))("%s fails with one line naming %s", (_args, named, i) => {
    const r = results[i]!;
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(named);
  });

  test("none of them changed the database", () => {
    expect(after).toBe(before);
  });
});

describe("commands are checked before anything is opened", () => {
  test.each([
    [["frobnicate"]], [["accounts", "frob"]], [["keys", "create"]], [["credits", "add", "acct_x"]], [["accounts", "list", "extra"]],
    [["accounts", "create", "alice", "--credts", "25"]], [["keys", "create", "acct_x", "--limit"]],
  ])(
    "%p exits 2 and creates no data directory, in the working directory or SWITCHYARD_DATA_DIR",
    (args) => {
      const cwd = mkdtempSync(join(tmpdir(), "switchyard-cli-empty-"));
      const home = mkdtempSync(join(tmpdir(), "switchyard-cli-home-")); // Bun may keep a cache in $HOME
      try {
        const p = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: home }, stdout: "pipe", stderr: "pipe" });
        expect(p.exitCode).toBe(2);
        expect(p.stderr.toString().trim().split("\n")).toHaveLength(1);
        expect(readdirSync(cwd)).toEqual([]);
        const elsewhere = join(cwd, "elsewhere");
        const q = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: home, SWITCHYARD_DATA_DIR: elsewhere }, stdout: "pipe", stderr: "pipe" });
        expect(q.exitCode).toBe(2);
        expect(existsSync(elsewhere)).toBe(false);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
        rmSync(home, { recursive: true, force: true });
      }
    },
    30_000,
  );
});

describe("list commands print tables; --json prints JSON", () => {
  test("accounts list, keys list and ledger", () => {
    const id = cli(["accounts", "create", "table-person", "--credits", "3"]).json.id as string;
    const made = cli(["keys", "create", id, "--name", "laptop"]).json;
    const accounts = cli(["accounts", "list"]);
    expect(accounts.code).toBe(0);
    expect(accounts.json).toBeNull();
    const [head, ...rows] = accounts.stdout.trim().split("\n");
    expect(head!.split(/\s{2,}/)).toEqual(["ID", "NAME", "BALANCE", "RESERVED", "DISABLED", "RPM", "CONCURRENCY", "CREATED"]);
    expect(rows.find((r) => r.startsWith(id + " "))!.split(/\s+/).slice(0, 5)).toEqual([id, "table-person", "3.00", "0.00", "no"]);
    const keys = cli(["keys", "list", "--json", id]); // --json takes no value: the id stays an argument
    expect(keys.json.data.map((k: { id: string }) => k.id)).toEqual([made.id]);
    const keyTable = cli(["keys", "list", id]).stdout.trim().split("\n");
    expect(keyTable[0]!.split(/\s{2,}/)).toEqual(["ID", "PREFIX", "NAME", "CREATED", "REVOKED"]);
    expect(keyTable[1]!.split(/\s+/).slice(0, 3)).toEqual([made.id, made.prefix, "laptop"]);
    expect(keyTable.join("\n")).not.toContain(made.key);
    const ledger = cli(["ledger", id]).stdout.trim().split("\n");
    expect(ledger).toHaveLength(2);
    expect(ledger[1]).toContain("initial credits");
  });

  test("an empty list says so", () => {
    const id = cli(["accounts", "create", "no-keys"]).json.id as string;
    expect(cli(["keys", "list", id]).stdout).toBe("no keys\n");
  });
});
