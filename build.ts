#!/usr/bin/env bun
/**
 * Builds the one executable with `bun build --compile`:
 *
 *   bun run build.ts                              dist/switchyard for linux x64 (the default)
 *   bun run build.ts --target bun-linux-arm64     linux arm64 (also: SWITCHYARD_BUILD_TARGET=arm64)
 *   bun run build.ts --outfile /some/path         somewhere else than dist/switchyard
 *
 * The catalog is bundled because src/catalog/catalog.ts imports catalog.json. The `.node` addons
 * of onnxruntime-node and sharp are embedded by Bun itself (it follows their `require`s, with
 * process.platform/arch fixed to the target); the shared libraries those addons need are not, so
 * this script embeds them as files by generating src/runtime/native-assets.ts at bundle time, and
 * src/runtime/native.ts extracts and pre-loads them when the binary runs.
 *
 * The dashboard's front end (src/dashboard/client) is bundled here too and embedded as a module
 * in place of src/dashboard/embedded-assets.ts, so the binary serves it with no files around.
 *
 * Cross-building for arm64 needs sharp's arm64 packages, which npm does not install on x64: the
 * script fetches them with `npm pack` into .cache/npm/ (git-ignored) when node_modules lacks them.
 * Whitespace and syntax minification only: identifier minification breaks Elysia.
 */
import type { BunPlugin } from "bun";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { bundleDashboard } from "./src/dashboard/bundle";
import type { DashboardBundle } from "./src/dashboard/embedded-assets";

const ROOT = import.meta.dir;
const NODE_MODULES = join(ROOT, "node_modules");

export type Arch = "x64" | "arm64";

/** Accepts a Bun compile target or a shorthand; only Linux glibc x64/arm64 have the libraries we embed. */
export function parseTarget(raw: string | undefined): { target: string; arch: Arch } {
  // Unset or empty: the default.
  const t = (raw?.trim() || "bun-linux-x64").toLowerCase();
  const short: Record<string, string> = { x64: "bun-linux-x64", "linux-x64": "bun-linux-x64", arm64: "bun-linux-arm64", aarch64: "bun-linux-arm64", "linux-arm64": "bun-linux-arm64" };
  const target = short[t] ?? t;
  const m = /^bun-linux-(x64|arm64)(-baseline|-modern)?$/.exec(target);
  if (!m) throw new Error(`unsupported target "${raw}": use bun-linux-x64 (default), bun-linux-x64-baseline, bun-linux-x64-modern or bun-linux-arm64`);
  return { target, arch: m[1] as Arch };
}

interface EmbeddedLibrary {
  group: "onnxruntime" | "sharp";
  name: string;
  path: string;
  size: number;
  preloadSymbol?: string;
}

function readJson(path: string): any {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** A package directory: node_modules first, else a copy fetched with `npm pack` into .cache/npm. */
function packageDir(name: string, version: string): string {
  const installed = join(NODE_MODULES, name);
  if (existsSync(join(installed, "package.json")) && readJson(join(installed, "package.json")).version === version) return installed;
  const cached = join(ROOT, ".cache", "npm", `${name.replace("/", "+")}@${version}`);
  if (existsSync(join(cached, "package", "package.json"))) return join(cached, "package");
  mkdirSync(cached, { recursive: true });
  console.log(`fetching ${name}@${version} (not installed for this platform) with npm pack`);
  const pack = Bun.spawnSync(["npm", "pack", `${name}@${version}`, "--silent", "--pack-destination", cached], { stderr: "inherit" });
  const tarball = pack.stdout.toString().trim().split("\n").pop();
  if (pack.exitCode !== 0 || !tarball) throw new Error(`npm pack ${name}@${version} failed`);
  const untar = Bun.spawnSync(["tar", "xzf", join(cached, tarball), "-C", cached], { stderr: "inherit" });
  if (untar.exitCode !== 0) throw new Error(`could not unpack ${tarball}`);
  return join(cached, "package");
}

function library(group: EmbeddedLibrary["group"], path: string, preloadSymbol?: string): EmbeddedLibrary {
  const name = path.split("/").pop()!;
  return { group, name, path, size: statSync(path).size, ...(preloadSymbol ? { preloadSymbol } : {}) };
}

/** ONNX Runtime: libonnxruntime.so.1 (pre-loaded) and any provider libraries beside it. */
function ortLibraries(arch: Arch): EmbeddedLibrary[] {
  const dir = join(NODE_MODULES, "onnxruntime-node", "bin", "napi-v6", "linux", arch);
  if (!existsSync(join(dir, "onnxruntime_binding.node"))) throw new Error(`onnxruntime-node has no linux/${arch} addon in ${dir}`);
  return readdirSync(dir)
    .filter((f) => /\.so(\.\d+)*$/.test(f))
    .sort()
    .map((f) => library("onnxruntime", join(dir, f), f === "libonnxruntime.so.1" ? "OrtGetApiBase" : undefined));
}

/** sharp: the addon package (resolved for the bundler) and libvips-cpp (pre-loaded). */
function sharpPackages(arch: Arch): { addon: string; libraries: EmbeddedLibrary[] } {
  const sharpPkg = readJson(join(NODE_MODULES, "sharp", "package.json"));
  const addonName = `@img/sharp-linux-${arch}`;
  const vipsName = `@img/sharp-libvips-linux-${arch}`;
  const addonDir = packageDir(addonName, sharpPkg.optionalDependencies[addonName]);
  const vipsDir = join(packageDir(vipsName, sharpPkg.optionalDependencies[vipsName]), "lib");
  const addon = join(addonDir, "lib", `sharp-linux-${arch}-${sharpPkg.version}.node`);
  if (!existsSync(addon)) throw new Error(`missing ${addon}`);
  const vips = readdirSync(vipsDir).filter((f) => /^libvips-cpp\.so\.[\d.]+$/.test(f));
  if (vips.length !== 1) throw new Error(`expected one libvips-cpp.so.* in ${vipsDir}, found ${vips.length}`);
  return { addon, libraries: [library("sharp", join(vipsDir, vips[0]!), "vips_version")] };
}

/** Identifies the set of embedded libraries, so each build extracts into its own cache dir. */
function bundleId(libs: EmbeddedLibrary[]): string {
  const h = createHash("sha256");
  for (const l of libs) h.update(l.group).update(l.name).update(readFileSync(l.path));
  return h.digest("hex").slice(0, 12);
}

/** The source that replaces src/runtime/native-assets.ts inside the binary. */
export function nativeAssetsModule(libs: EmbeddedLibrary[], id: string, target: string): string {
  const imports = libs.map((l, i) => `import lib${i} from ${JSON.stringify(l.path)} with { type: "file" };`);
  const entries = libs.map(
    (l, i) => `{ group: ${JSON.stringify(l.group)}, name: ${JSON.stringify(l.name)}, embeddedPath: lib${i}, size: ${l.size}${l.preloadSymbol ? `, preloadSymbol: ${JSON.stringify(l.preloadSymbol)}` : ""} }`,
  );
  return `${imports.join("\n")}\nexport const nativeAssets = { bundleId: ${JSON.stringify(id)}, target: ${JSON.stringify(target)}, assets: [\n  ${entries.join(",\n  ")}\n] };\n`;
}

function nativePlugin(source: string, arch: Arch, sharpAddon: string): BunPlugin {
  return {
    name: "switchyard-native",
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/]runtime[\\/]native-assets\.ts$/ }, () => ({ contents: source, loader: "js" }));
      // sharp requires "@img/sharp-linux-<arch>/sharp.node"; point it at the package we found
      // (node_modules, or the npm pack copy when cross-building).
      // Every other platform's addon it lists stays a runtime require that is never reached
      // (sharp picks by the running platform), instead of being embedded for nothing.
      build.onResolve({ filter: /^@img\/sharp-[^/]+\/sharp\.node$/ }, (args) =>
        args.path === `@img/sharp-linux-${arch}/sharp.node` ? { path: sharpAddon } : { path: args.path, external: true },
      );
    },
  };
}

/** The dashboard's front end, bundled now, replaces src/dashboard/embedded-assets.ts (null from source). */
function dashboardPlugin(bundle: DashboardBundle): BunPlugin {
  return {
    name: "switchyard-dashboard",
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/]dashboard[\\/]embedded-assets\.ts$/ }, () => ({
        contents: `export const embeddedDashboard = ${JSON.stringify(bundle)};\n`,
        loader: "js",
      }));
    },
  };
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return undefined;
  const a = argv[i]!;
  return a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[i + 1];
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

async function main(argv: string[]): Promise<number> {
  const started = performance.now();
  const { target, arch } = parseTarget(flag(argv, "target") ?? process.env.SWITCHYARD_BUILD_TARGET);
  const outfile = resolve(flag(argv, "outfile") ?? join(ROOT, "dist", "switchyard"));
  mkdirSync(dirname(outfile), { recursive: true });

  const sharp = sharpPackages(arch);
  const libs = [...ortLibraries(arch), ...sharp.libraries];
  const id = bundleId(libs);
  const dashboard = await bundleDashboard();
  const result = await Bun.build({
    // Every worker thread's entry file must be an entry point too, or `new Worker(...)` finds
    // nothing inside the binary: onnx-worker.ts runs the ONNX sessions (embeddings, speech) off the
    // event loop, addressed as "./engines/onnx-worker.ts" from the bundle root src/ (see
    // src/engines/onnx-worker-client.ts); token-worker.ts counts long chat texts, addressed as
    // "./chat/token-worker.ts" (src/chat/token-counter.ts); tokenizer-worker.ts tokenises
    // embeddings input, "./engines/embeddings/tokenizer-worker.ts" (tokenizer-pool.ts).
    entrypoints: [
      join(ROOT, "src", "main.ts"),
      join(ROOT, "src", "engines", "onnx-worker.ts"),
      join(ROOT, "src", "chat", "token-worker.ts"),
      join(ROOT, "src", "engines", "embeddings", "tokenizer-worker.ts"),
    ],
    compile: {
      target: target as Bun.Build.CompileTarget,
      outfile,
      // Configuration is environment variables only; a bunfig.toml, tsconfig.json or package.json
      // in whatever directory the binary is started from must not change its behaviour.
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
    // Never identifiers: Elysia reads handler source (parameter names) to decide what each
    // handler and hook receives; renamed, its routes answer 500 (test/binary.test.ts catches it).
    minify: { whitespace: true, syntax: true, identifiers: false },
    plugins: [nativePlugin(nativeAssetsModule(libs, id, target), arch, sharp.addon), dashboardPlugin(dashboard)],
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    return 1;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`built ${outfile} (${target}, ${mb(statSync(outfile).size)}) in ${seconds}s`);
  console.log(`embedded libraries (bundle ${id}), extracted at run time to $XDG_CACHE_HOME|~/.cache/switchyard/<version>-${id}/:`);
  for (const l of libs) console.log(`  ${l.group}/${l.name}  ${mb(l.size)}${l.preloadSymbol ? "  (pre-loaded)" : ""}`);
  console.log(`embedded dashboard: ${dashboard.js.length} bytes of JavaScript, ${dashboard.css.length} bytes of CSS`);

  // A quick check that the binary starts, when it can run here.
  if (arch === process.arch) {
    const run = Bun.spawnSync([outfile, "--version"], { cwd: dirname(outfile), env: { ...process.env, SWITCHYARD_LOG_LEVEL: "silent" } });
    const version = readJson(join(ROOT, "package.json")).version;
    if (run.exitCode !== 0 || run.stdout.toString().trim() !== version) {
      console.error(`the built binary did not answer --version with ${version}: ${run.stderr.toString()}`);
      return 1;
    }
  }
  return 0;
}

if (import.meta.main) {
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (e) {
    // Bun.build throws an AggregateError whose `errors` are the bundler's messages.
    for (const inner of e instanceof AggregateError ? e.errors : []) {
      const at = (inner as { position?: { file: string; line: number } | null }).position;
      console.error(at ? `${at.file}:${at.line}: ${(inner as Error).message}` : String(inner));
    }
    console.error(`build failed: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}
