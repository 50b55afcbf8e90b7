/**
 * The README opens with the project's two commands, in this order: one runs the service, one runs
 * the tests, each doing all set-up on a fresh machine. CI (.ci/run) runs the second one exactly,
 * so the README and CI cannot drift apart unnoticed.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");

/** The commands of the README's first code block, comments removed. */
function firstCommands(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /^```sh\n([\s\S]*?)^```/m.exec(readme);
  if (!block) throw new Error("README.md has no ```sh block");
  return block[1]!
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "");
}

test("the README's first two commands run the service, then the tests", () => {
  expect(firstCommands()).toEqual(["npm ci && npm start", "npm ci && npm test"]);
});

test("CI runs the README's test command exactly", () => {
  const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
  expect(ci).toContain(`( ${firstCommands()[1]} )`);
});

test("the README stays a guide: at most 500 lines (the reference lives in docs/)", () => {
  const lines = readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length;
  expect(lines).toBeLessThanOrEqual(500);
});
