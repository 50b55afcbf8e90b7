/**
 * `switchyard migrate` as a real subprocess: SQLite by default; PostgreSQL when
 * SWITCHYARD_DATABASE_URL is set, where several started at once migrate exactly once between
 * them (advisory lock); a bad or unreachable URL is one line naming the variable, never the
 * password.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { testDatabase } from "./support/postgres";
import { PG_MIGRATIONS } from "../src/store/postgres/migrations/index";

const ROOT = resolve(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules/.bin/bun");
const dataDir = mkdtempSync(join(tmpdir(), "switchyard-migrate-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function migrate(env: Record<string, string>) {
  const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), "migrate"], {
    cwd: tmpdir(),
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "silent", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  let json: any = null;
  try {
    json = JSON.parse(stdout);
  } catch {}
  return { code, stdout, stderr, json };
}

test("without SWITCHYARD_DATABASE_URL it migrates the SQLite store in the data directory", async () => {
  const r = await migrate({});
  expect(r.code).toBe(0);
  expect(r.json).toMatchObject({ store: "sqlite", path: join(dataDir, "switchyard.db") });
  expect(r.json.schema_version).toBeGreaterThan(0);
}, 30_000);

test("three instances migrating one PostgreSQL database at once: applied exactly once", async () => {
  const url = await testDatabase();
  const runs = await Promise.all([1, 2, 3].map(() => migrate({ SWITCHYARD_DATABASE_URL: url })));
  for (const r of runs) expect(r.code).toBe(0);
  const latest = Math.max(...PG_MIGRATIONS.map((m) => m.version));
  expect(runs.map((r) => r.json.schema_version)).toEqual([latest, latest, latest]);
  const applied = runs.map((r) => r.json.applied as number[]).sort((a, b) => b.length - a.length);
  expect(applied).toEqual([PG_MIGRATIONS.map((m) => m.version), [], []]);
  const again = await migrate({ SWITCHYARD_DATABASE_URL: url });
  expect(again.json).toEqual({ store: "postgresql", schema_version: latest, applied: [] });
}, 60_000);

test("a bad or unreachable database URL is one line naming the variable, without the password", async () => {
  const bad = await migrate({ SWITCHYARD_DATABASE_URL: "mysql://root:hunter2secret@db/x" });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("SWITCHYARD_DATABASE_URL");
  expect(bad.stderr).not.toContain("hunter2secret");
  const down = await migrate({ SWITCHYARD_DATABASE_URL: "postgres://u:hunter2secret@127.0.0.1:1/x" });
  expect(down.code).toBe(2);
  expect(down.stderr.trim().split("\n").length).toBe(1);
  expect(down.stderr).toContain("SWITCHYARD_DATABASE_URL");
  expect(down.stderr).not.toContain("hunter2secret");
}, 30_000);
