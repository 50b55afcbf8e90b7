#!/usr/bin/env bun
/**
 * `npm run release`: the binaries an operator downloads, with their checksums.
 *
 *   bun run release.ts                  every release target into dist/release/
 *   bun run release.ts --host           only the one for this machine (what test/binary.test.ts runs)
 *   bun run release.ts --targets switchyard-linux-x64,switchyard-linux-arm64   some of them
 *   bun run release.ts --out DIR        somewhere else than dist/release/
 *
 * Writes switchyard-linux-x64, switchyard-linux-arm64 and switchyard-darwin-arm64 (macOS on Apple
 * silicon, CPU only) and SHA256SUMS in `sha256sum -c` format. Cross builds take sharp's packages
 * for the other platforms from npm (build.ts, cached in .cache/npm/). The binary for this machine
 * is checked to start (--version) as it is built.
 *
 * macOS: a binary cross-built here carries Bun's ad-hoc signature; macOS refuses a binary whose
 * signature is invalid, so the release workflow builds and re-signs the darwin binary on a Mac
 * (.github/workflows/release.yml). Re-sign a locally cross-built one on a Mac with
 * `codesign --remove-signature switchyard-darwin-arm64 && codesign -s - switchyard-darwin-arm64`.
 */
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildBinary, parseTarget, type BuildResult } from "./build";

const ROOT = import.meta.dir;

/** Release file name → Bun target. */
export const RELEASE_TARGETS: Record<string, string> = {
  "switchyard-linux-x64": "bun-linux-x64",
  "switchyard-linux-arm64": "bun-linux-arm64",
  "switchyard-darwin-arm64": "bun-darwin-arm64",
};

/** The release file for the machine running this, if there is one. */
export function hostReleaseName(platform: string = process.platform, arch: string = process.arch): string | null {
  const name = `switchyard-${platform}-${arch}`;
  return name in RELEASE_TARGETS ? name : null;
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** SHA256SUMS for every switchyard-* file in `dir`, sorted by name, as `sha256sum` writes it. */
export async function writeChecksums(dir: string): Promise<string> {
  const names = readdirSync(dir).filter((f) => f.startsWith("switchyard-")).sort();
  const lines = [];
  for (const name of names) lines.push(`${await sha256File(join(dir, name))}  ${name}`);
  const text = lines.join("\n") + "\n";
  writeFileSync(join(dir, "SHA256SUMS"), text);
  return text;
}

export async function release(outDir: string, names: string[], log: (line: string) => void = console.log): Promise<BuildResult[]> {
  mkdirSync(outDir, { recursive: true });
  // A stale binary from an earlier run must not end up in the checksums of this one.
  for (const f of readdirSync(outDir)) if (f.startsWith("switchyard-") || f === "SHA256SUMS") rmSync(join(outDir, f), { force: true });
  const built: BuildResult[] = [];
  for (const name of names) {
    parseTarget(RELEASE_TARGETS[name]);
    built.push(await buildBinary(RELEASE_TARGETS[name], join(outDir, name), log));
  }
  const sums = await writeChecksums(outDir);
  log(`\n${outDir}:`);
  for (const b of built) log(`  ${b.outfile.split("/").pop()}  ${(b.bytes / 1024 / 1024).toFixed(1)} MiB  (${b.seconds.toFixed(1)} s)`);
  log(`SHA256SUMS:\n${sums.trimEnd()}`);
  return built;
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf("--out");
  const outDir = resolve(at >= 0 && argv[at + 1] ? argv[at + 1]! : join(ROOT, "dist", "release"));
  let names = Object.keys(RELEASE_TARGETS);
  const only = argv.indexOf("--targets");
  if (only >= 0) {
    names = (argv[only + 1] ?? "").split(",").filter(Boolean);
    const unknown = names.filter((n) => !(n in RELEASE_TARGETS));
    if (names.length === 0 || unknown.length > 0) {
      console.error(`release: --targets takes a comma-separated list of ${Object.keys(RELEASE_TARGETS).join(", ")}${unknown.length ? ` (not: ${unknown.join(", ")})` : ""}`);
      process.exit(2);
    }
  }
  if (argv.includes("--host")) {
    const host = hostReleaseName();
    if (!host) {
      console.error(`release: no release target for ${process.platform}-${process.arch}`);
      process.exit(1);
    }
    names = [host];
  }
  try {
    await release(outDir, names);
  } catch (e) {
    for (const inner of e instanceof AggregateError ? e.errors : []) console.error(String(inner));
    console.error(`release failed: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}
