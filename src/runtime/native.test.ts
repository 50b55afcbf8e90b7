import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cacheRootCandidates, extractAsset, isCompiled, nativeStatus, prepareNative, versionDir } from "./native";

describe("cacheRootCandidates", () => {
  test.each([
    ["XDG set", { XDG_CACHE_HOME: "/x/cache" }, "/home/u", ["/x/cache/switchyard", "/home/u/.cache/switchyard", "/tmp/switchyard-1000"]],
    ["XDG unset", {}, "/home/u", ["/home/u/.cache/switchyard", "/tmp/switchyard-1000"]],
    ["XDG empty", { XDG_CACHE_HOME: "  " }, "/home/u", ["/home/u/.cache/switchyard", "/tmp/switchyard-1000"]],
    ["XDG relative is invalid per the spec", { XDG_CACHE_HOME: "cache" }, "/home/u", ["/home/u/.cache/switchyard", "/tmp/switchyard-1000"]],
    ["no home", {}, null, ["/tmp/switchyard-1000"]],
    ["relative home ignored", {}, "home", ["/tmp/switchyard-1000"]],
  ] as const)("%s", (_name, env, home, dirs) => {
    const got = cacheRootCandidates(env, home, "/tmp", 1000);
    expect(got.map((c) => c.dir)).toEqual([...dirs]);
    // Only the temp-dir fallback is shared with other users.
    expect(got.map((c) => c.shared)).toEqual(dirs.map((d) => d.startsWith("/tmp/")));
  });
});

test("versionDir keys the cache by version and build", () => {
  expect(versionDir("/c/switchyard", "0.1.0", "abc123")).toBe("/c/switchyard/0.1.0-abc123");
});

describe("extractAsset", () => {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-native-"));
  const source = join(dir, "embedded.so");
  writeFileSync(source, "pretend library bytes");
  const asset = { group: "sharp" as const, name: "libdemo.so.1", embeddedPath: source, size: statSync(source).size };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("writes <dir>/<group>/<name> with the embedded bytes and leaves no partial file", () => {
    const out = join(dir, "cache");
    const path = extractAsset(asset, out);
    expect(path).toBe(join(out, "sharp", "libdemo.so.1"));
    expect(readFileSync(path, "utf8")).toBe("pretend library bytes");
    expect(readdirSync(join(out, "sharp"))).toEqual(["libdemo.so.1"]);
  });

  test("keeps a complete copy and replaces one of the wrong size", () => {
    const out = join(dir, "cache2");
    const path = extractAsset(asset, out);
    writeFileSync(path, "same size, other bytes"); // 22 bytes vs 21: different size
    extractAsset(asset, out);
    expect(readFileSync(path, "utf8")).toBe("pretend library bytes");
    const before = statSync(path).mtimeMs;
    extractAsset(asset, out);
    expect(statSync(path).mtimeMs).toBe(before);
  });

  test("a missing embedded file throws and leaves nothing behind", () => {
    const out = join(dir, "cache3");
    expect(() => extractAsset({ ...asset, embeddedPath: join(dir, "absent.so") }, out)).toThrow();
    expect(readdirSync(join(out, "sharp"))).toEqual([]);
  });
});

test("outside the compiled binary, preparing is a no-op", () => {
  expect(isCompiled()).toBe(false);
  prepareNative("onnxruntime");
  prepareNative("sharp");
  expect(nativeStatus()).toEqual({ compiled: false, target: null, bundleId: null, cacheDir: null, libraries: [] });
});
