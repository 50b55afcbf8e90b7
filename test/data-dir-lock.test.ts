/**
 * One server per data directory (issue: a second server on the same directory voided the first
 * one's live holds at start-up, so work served in full went unbilled). The first server holds an
 * exclusive lock for its life; a second one stops at start-up with one line naming
 * SWITCHYARD_DATA_DIR, in the same process or another; the CLI keeps working beside the server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { tmpdir } from "node:os";
import { loadConfig } from "../src/config";
import { startServer } from "../src/server";
import { startHarness, ADMIN_TOKEN, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat, contentChunks, readUntil } from "./support/gateway-client";
import { ledgerState, settled } from "./support/ledger-state";

const ROOT = resolve(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules/.bin/bun");

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  SWITCHYARD_DATA_DIR: h.dataDir,
  SWITCHYARD_LOG_LEVEL: "silent",
  ...extra,
});

async function run(args: string[], extra: Record<string, string> = {}) {
  const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], { cwd: tmpdir(), env: env(extra), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("a second server on the same data directory", () => {
  test("in the same process: refused at start-up naming SWITCHYARD_DATA_DIR; the first server's live stream is billed in full", async () => {
    fake.behave({ words: Array.from({ length: 20 }, (_, i) => ` w${i}`), chunkDelayMs: 20 });
    const before = ledgerState(h, acct.id);
    const res = await chat(h, acct.key, { stream: true });
    const id = res.headers.get("x-request-id")!;
    const { reader, text } = await readUntil(res, (t) => contentChunks(t).length >= 2);
    const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: h.dataDir, SWITCHYARD_LOG_LEVEL: "silent", SWITCHYARD_UPSTREAM_URL: fake.url });
    const second = await startServer(config).then(
      async (s) => {
        await s.stop();
        return null;
      },
      (e: Error) => e,
    );
    expect(second?.message).toContain("SWITCHYARD_DATA_DIR");
    expect(second?.message).toContain("already served by another Switchyard server");
    // The first server's hold is untouched...
    expect((await h.probe.hold(id))?.state).toBe("pending");
    let rest = text;
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      rest += new TextDecoder().decode(r.value);
    }
    // ...and its request ends normally, billed.
    expect(rest).toContain("[DONE]");
    expect(rest).not.toContain("not billed");
    const after = await settled(h, acct.id);
    expect(after.charges).toBe(before.charges + 1);
    expect((await h.probe.hold(id))?.state).toBe("posted");
  });

  test("in another process: stops with one line naming SWITCHYARD_DATA_DIR", async () => {
    const r = await run(["serve"], { PORT: "0", HOST: "127.0.0.1" });
    expect(r.code).not.toBe(0);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("SWITCHYARD_DATA_DIR");
    expect(r.stdout).toBe("");
  }, 20_000);

  test("the CLI keeps working beside the server, and the server sees what it wrote", async () => {
    const r = await run(["credits", "add", acct.id, "2.5", "--reason", "beside the server"], { SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const view = await h.admin("GET", `/admin/accounts/${acct.id}`);
    expect(view.body.balance).toBe(JSON.parse(r.stdout).balance);
  }, 20_000);

  test("the CLI refuses a deduction beside the server (its holds are in the server's memory), naming why; nothing changes", async () => {
    const before = ledgerState(h, acct.id);
    const r = await run(["credits", "deduct", acct.id, "0.5"], { SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("while a Switchyard server serves this data directory");
    expect(r.stderr).toContain("POST /admin/accounts/{id}/credits");
    expect(ledgerState(h, acct.id)).toEqual(before);
    // Through the server the same deduction works.
    const via = await h.admin("POST", `/admin/accounts/${acct.id}/credits`, { amount: -0.5, reason: "through the server" });
    expect(via.status).toBe(200);
  }, 20_000);

  test("once the first server stops, the directory can be served again", async () => {
    const dataDir = h.dataDir;
    const first = await startServer(loadConfig({ PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: join(dataDir, "again"), SWITCHYARD_LOG_LEVEL: "silent" }));
    await first.stop();
    const second = await startServer(loadConfig({ PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: join(dataDir, "again"), SWITCHYARD_LOG_LEVEL: "silent" }));
    await second.stop();
  });
});
