/** readConfigFile: regular files (through symbolic links too) up to the cap; anything else refused at once, saying what it is. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigFileError, readConfigFile } from "./config-file";

const dir = mkdtempSync(join(tmpdir(), "switchyard-config-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a regular file, directly or through a symbolic link, up to the cap exactly", async () => {
  const file = join(dir, "ok.json");
  writeFileSync(file, "x".repeat(100));
  symlinkSync(file, join(dir, "link.json"));
  expect(await readConfigFile(file, 100)).toBe("x".repeat(100));
  expect(await readConfigFile(join(dir, "link.json"), 100)).toHaveLength(100);
  await expect(readConfigFile(file, 99)).rejects.toThrow("larger than 99 bytes");
});

test.each([
  ["a FIFO", (): string => (Bun.spawnSync(["mkfifo", join(dir, "fifo")]), join(dir, "fifo")), "a FIFO, not a regular file"],
  ["a symbolic link to a directory", (): string => (symlinkSync(dir, join(dir, "dir-link")), join(dir, "dir-link")), "a directory, not a regular file"],
  ["a device", (): string => "/dev/null", "a device, not a regular file"],
  ["a missing file", (): string => join(dir, "missing"), "no such file"],
] as const)("%s is refused at once", async (_what, make, why) => {
  const err = await readConfigFile(make()).catch((e) => e);
  expect(err).toBeInstanceOf(ConfigFileError);
  expect((err as Error).message).toBe(why);
});
