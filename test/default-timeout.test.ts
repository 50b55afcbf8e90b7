/**
 * A plain `bun test` from the project's root gives every test the project's default timeout
 * (bunfig.toml preloads test/support/default-timeout.ts) in every file of a run, not only the
 * first, which is all a preload's setDefaultTimeout() reaches on its own in Bun 1.4.5; and a
 * --timeout given on the command line wins. Each case runs `bun test` on three files whose one
 * test never ends, and reads which timeout ended each.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules/.bin/bun");
const dir = mkdtempSync(join(tmpdir(), "switchyard-test-timeout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files = ["first", "second", "third"].map((name) => {
  const path = join(dir, `${name}.test.ts`);
  writeFileSync(path, `import { test } from "bun:test";\ntest("never ends", () => new Promise(() => {}));\n`);
  return path;
});

/** Runs `bun test` from the project's root on the three files; the timeouts that ended their tests. */
async function timeoutsOf(flags: string[], env: Record<string, string>): Promise<string[]> {
  const p = Bun.spawn([BUN, "test", ...flags, ...files], { cwd: ROOT, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(code).toBe(1);
  return [...(out + err).matchAll(/timed out after (\d+)ms/g)].map((m) => m[1]!);
}

test("every file of a run gets the preload's timeout, the first and the ones after it", async () => {
  expect(await timeoutsOf([], { SWITCHYARD_TEST_TIMEOUT_MS: "300" })).toEqual(["300", "300", "300"]);
});

test("--timeout on the command line wins over the preload's", async () => {
  expect(await timeoutsOf(["--timeout", "400"], { SWITCHYARD_TEST_TIMEOUT_MS: "300" })).toEqual(["400", "400", "400"]);
});
