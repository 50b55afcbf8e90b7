import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AliasesError, ModelAliases } from "./aliases";

const dir = mkdtempSync(join(tmpdir(), "switchyard-aliases-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const inline = new ModelAliases(JSON.stringify({
  "claude-haiku-4-5": "minimax-m2",
  "claude-haiku-*": "kimi-k2-instruct",
  "claude-*": "glm-4.6",
  "gpt-5?-mini": "qwen3-235b-a22b-instruct",
  "gpt-5*": "glm-4.6-turbo",
}));

test.each([
  ["claude-haiku-4-5", "minimax-m2"], // exact beats a glob listed earlier or later
  ["claude-haiku-4-5-20251001", "kimi-k2-instruct"], // first matching glob in document order
  ["claude-sonnet-4-5-20250929", "glm-4.6"],
  ["gpt-51-mini", "qwen3-235b-a22b-instruct"],
  ["gpt-5-codex", "glm-4.6-turbo"],
  ["gpt-4o", null],
  ["claude", null],
])("%p → %p", (id, target) => {
  expect(inline.target(id)).toBe(target);
});

test("regex characters in an alias are literal", () => {
  const a = new ModelAliases(JSON.stringify({ "o1.preview": "glm-4.6", "a+b*": "x" }));
  expect(a.target("o1.preview")).toBe("glm-4.6");
  expect(a.target("o1xpreview")).toBeNull();
  expect(a.target("a+b-1")).toBe("x");
  expect(a.target("aab")).toBeNull();
});

test.each([
  ["not json", "{"],
  ["an array", "[]"],
  ["a non-string target", '{"claude-*": 5}'],
  ["an empty target", '{"claude-*": ""}'],
])("invalid document (%s) throws naming the problem", async (_name, text) => {
  await expect(ModelAliases.open(text)).rejects.toThrow(AliasesError);
});

test("unset: nothing is an alias", () => {
  expect(new ModelAliases(null).target("claude-sonnet-4-5")).toBeNull();
});

test("a file is read off the event loop and re-read when it changes; a broken edit keeps the last good aliases", async () => {
  const file = join(dir, "aliases.json");
  writeFileSync(file, JSON.stringify({ "claude-*": "glm-4.6" }));
  const errors: string[] = [];
  const a = await ModelAliases.open(file, (m) => errors.push(m));
  expect(a.target("claude-x")).toBe("glm-4.6");
  // The check runs in the background: a request is answered from what is loaded meanwhile.
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 400 && !done(); i++) await Bun.sleep(25);
  };
  await Bun.sleep(250);
  writeFileSync(file, JSON.stringify({ "claude-*": "minimax-m2", "extra-model": "kimi-k2-instruct" }));
  await until(() => a.target("claude-x") === "minimax-m2");
  expect(a.target("claude-x")).toBe("minimax-m2");
  expect(a.target("extra-model")).toBe("kimi-k2-instruct");
  await Bun.sleep(250);
  writeFileSync(file, "{ broken");
  await until(() => (a.target("claude-x"), errors.length > 0));
  expect(a.target("claude-x")).toBe("minimax-m2");
  expect(errors.join()).toContain("SWITCHYARD_MODEL_ALIASES");
});
