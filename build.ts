#!/usr/bin/env bun
/**
 * Builds the one executable with `bun build --compile`:
 *
 *   bun run build.ts                              dist/switchyard for linux x64 (the default)
 *   bun run build.ts --target bun-linux-arm64     linux arm64 (also: SWITCHYARD_BUILD_TARGET=arm64)
 *   bun run build.ts --target bun-darwin-arm64    macOS on Apple silicon (CPU only)
 *   bun run build.ts --outfile /some/path         somewhere else than dist/switchyard
 *
 * `npm run release` (release.ts) builds every release target into dist/release/ with SHA256SUMS.
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
 * Cross-building needs sharp's packages for the target platform, which npm installs only for the
 * host: the script fetches them with `npm pack` into .cache/npm/ (git-ignored) when node_modules
 * lacks them. onnxruntime-node ships every platform's addon in its own package already.
 * The commit, build time and ONNX Runtime version go into the binary (src/runtime/build-info.ts)
 * for `switchyard version`; SOURCE_DATE_EPOCH, when set, fixes the build time.
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
export type Os = "linux" | "darwin";

/**
 * Accepts a Bun compile target or a shorthand. Supported: Linux glibc x64/arm64 and macOS arm64,
 * the platforms whose ONNX Runtime and sharp libraries we can embed.
 */
export function parseTarget(raw: string | undefined): { target: string; os: Os; arch: Arch } {
  // Unset or empty: the default.
  const t = (raw?.trim() || "bun-linux-x64").toLowerCase();
  const short: Record<string, string> = {
    x64: "bun-linux-x64",
    "linux-x64": "bun-linux-x64",
    arm64: "bun-linux-arm64",
    aarch64: "bun-linux-arm64",
    "linux-arm64": "bun-linux-arm64",
    "darwin-arm64": "bun-darwin-arm64",
  };
  const target = short[t] ?? t;
  const m = /^bun-linux-(x64|arm64)(-baseline|-modern)?$/.exec(target);
  if (m) return { target, os: "linux", arch: m[1] as Arch };
  if (target === "bun-darwin-arm64") return { target, os: "darwin", arch: "arm64" };
  throw new Error(`unsupported target "${raw}": use bun-linux-x64 (default), bun-linux-x64-baseline, bun-linux-x64-modern, bun-linux-arm64 or bun-darwin-arm64`);
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

/**
 * ONNX Runtime: the library its addon links (pre-loaded: libonnxruntime.so.1, or on macOS
 * libonnxruntime.1.dylib, the install name the addon asks for) and any provider libraries beside
 * it on Linux. macOS's package also ships libonnxruntime.1.30.0.dylib, the same file under its
 * full version: left out, it would only double the binary's size.
 */
function ortLibraries(os: Os, arch: Arch): EmbeddedLibrary[] {
  const dir = join(NODE_MODULES, "onnxruntime-node", "bin", "napi-v6", os, arch);
  if (!existsSync(join(dir, "onnxruntime_binding.node"))) throw new Error(`onnxruntime-node has no ${os}/${arch} addon in ${dir}`);
  const main = os === "darwin" ? "libonnxruntime.1.dylib" : "libonnxruntime.so.1";
  const wanted = os === "darwin" ? (f: string) => f === main : (f: string) => /\.so(\.\d+)*$/.test(f);
  const libs = readdirSync(dir).filter(wanted).sort();
  if (!libs.includes(main)) throw new Error(`onnxruntime-node has no ${main} in ${dir}`);
  return libs.map((f) => library("onnxruntime", join(dir, f), f === main ? "OrtGetApiBase" : undefined));
}

/** sharp: the addon package (resolved for the bundler) and libvips-cpp (pre-loaded). */
function sharpPackages(os: Os, arch: Arch): { addon: string; libraries: EmbeddedLibrary[] } {
  const sharpPkg = readJson(join(NODE_MODULES, "sharp", "package.json"));
  const addonName = `@img/sharp-${os}-${arch}`;
  const vipsName = `@img/sharp-libvips-${os}-${arch}`;
  const addonDir = packageDir(addonName, sharpPkg.optionalDependencies[addonName]);
  const vipsDir = join(packageDir(vipsName, sharpPkg.optionalDependencies[vipsName]), "lib");
  const addon = join(addonDir, "lib", `sharp-${os}-${arch}-${sharpPkg.version}.node`);
  if (!existsSync(addon)) throw new Error(`missing ${addon}`);
  const vips = readdirSync(vipsDir).filter((f) => /^libvips-cpp\.(so\.[\d.]+|[\d.]+\.dylib)$/.test(f));
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

function nativePlugin(source: string, os: Os, arch: Arch, sharpAddon: string): BunPlugin {
  return {
    name: "switchyard-native",
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/]runtime[\\/]native-assets\.ts$/ }, () => ({ contents: source, loader: "js" }));
      // sharp requires "@img/sharp-<os>-<arch>/sharp.node"; point it at the package we found
      // (node_modules, or the npm pack copy when cross-building).
      // Every other platform's addon it lists stays a runtime require that is never reached
      // (sharp picks by the running platform), instead of being embedded for nothing.
      build.onResolve({ filter: /^@img\/sharp-[^/]+\/sharp\.node$/ }, (args) =>
        args.path === `@img/sharp-${os}-${arch}/sharp.node` ? { path: sharpAddon } : { path: args.path, external: true },
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

/** What `switchyard version` reports from inside the binary. */
export function buildInfoOf(target: string): { commit: string; builtAt: string; target: string; onnxruntime: string } {
  // SWITCHYARD_BUILD_COMMIT names it where the checkout has no git (a CI export, a source tarball).
  const given = process.env.SWITCHYARD_BUILD_COMMIT?.trim();
  const git = given ? null : Bun.spawnSync(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"], { stdout: "pipe", stderr: "ignore" });
  const epoch = Number(process.env.SOURCE_DATE_EPOCH);
  return {
    commit: given || (git?.exitCode === 0 ? git.stdout.toString().trim() : "unknown"),
    builtAt: new Date(Number.isFinite(epoch) && epoch > 0 ? epoch * 1000 : Date.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
    target,
    onnxruntime: readJson(join(NODE_MODULES, "onnxruntime-node", "package.json")).version,
  };
}

/** Replaces src/runtime/build-info.ts with the values of this build. */
function buildInfoPlugin(info: ReturnType<typeof buildInfoOf>): BunPlugin {
  return {
    name: "switchyard-build-info",
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/]runtime[\\/]build-info\.ts$/ }, () => ({ contents: `export const buildInfo = ${JSON.stringify(info)};\n`, loader: "js" }));
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

export interface BuildResult {
  outfile: string;
  target: string;
  bytes: number;
  seconds: number;
}

/**
 * Compiles one binary for `target` into `outfile`. When the target runs here, the binary must
 * then answer --version with this version; otherwise that check is left to a machine that can.
 */
export async function buildBinary(rawTarget: string | undefined, outfile: string, log: (line: string) => void = console.log): Promise<BuildResult> {
  const started = performance.now();
  const { target, os, arch } = parseTarget(rawTarget);
  mkdirSync(dirname(outfile), { recursive: true });

  const sharp = sharpPackages(os, arch);
  const libs = [...ortLibraries(os, arch), ...sharp.libraries];
  const id = bundleId(libs);
  const info = buildInfoOf(target);
  const dashboard = await bundleDashboard();
  const result = await Bun.build({
    // Every worker thread's entry file must be an entry point too, or `new Worker(...)` finds
    // nothing inside the binary: onnx-worker.ts runs the ONNX sessions (embeddings, speech) off the
    // event loop, addressed as "./engines/onnx-worker.ts" from the bundle root src/ (see
    // src/engines/onnx-worker-client.ts); token-worker.ts counts long chat texts, addressed as
    // "./tokens/token-worker.ts" (src/tokens/token-counter.ts); tokenizer-worker.ts tokenises
    // embeddings input, "./engines/embeddings/tokenizer-worker.ts" (tokenizer-pool.ts).
    entrypoints: [
      join(ROOT, "src", "main.ts"),
      join(ROOT, "src", "engines", "onnx-worker.ts"),
      join(ROOT, "src", "tokens", "token-worker.ts"),
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
    plugins: [nativePlugin(nativeAssetsModule(libs, id, target), os, arch, sharp.addon), dashboardPlugin(dashboard), buildInfoPlugin(info)],
  });
  if (!result.success) throw new AggregateError(result.logs, "bundling failed");
  const seconds = (performance.now() - started) / 1000;
  const bytes = statSync(outfile).size;
  log(`built ${outfile} (${target}, ${mb(bytes)}, commit ${info.commit}) in ${seconds.toFixed(1)}s`);
  log(`embedded libraries (bundle ${id}), extracted at run time to $XDG_CACHE_HOME|~/.cache/switchyard/<version>-${id}/:`);
  for (const l of libs) log(`  ${l.group}/${l.name}  ${mb(l.size)}${l.preloadSymbol ? "  (pre-loaded)" : ""}`);
  log(`embedded dashboard: ${dashboard.js.length} bytes of JavaScript, ${dashboard.css.length} bytes of CSS`);

  // On a Mac, sign it ad hoc again: macOS kills a binary whose signature does not match its
  // contents, and the compiler's own signature has not always been valid.
  if (os === "darwin" && process.platform === "darwin") {
    Bun.spawnSync(["codesign", "--remove-signature", outfile]);
    const sign = Bun.spawnSync(["codesign", "--sign", "-", "--force", outfile], { stderr: "pipe" });
    if (sign.exitCode !== 0) throw new Error(`codesign failed: ${sign.stderr.toString()}`);
  }
  // A quick check that the binary starts, when it can run here.
  if (os === process.platform && arch === process.arch) {
    const run = Bun.spawnSync([outfile, "--version"], { cwd: dirname(outfile), env: { ...process.env, SWITCHYARD_LOG_LEVEL: "silent" } });
    const version = readJson(join(ROOT, "package.json")).version;
    const first = run.stdout.toString().split("\n")[0]!.trim();
    if (run.exitCode !== 0 || first !== `switchyard ${version}`) {
      throw new Error(`the built binary did not answer --version with "switchyard ${version}": ${first} ${run.stderr.toString()}`);
    }
  }
  return { outfile, target, bytes, seconds };
}

async function main(argv: string[]): Promise<number> {
  await buildBinary(flag(argv, "target") ?? process.env.SWITCHYARD_BUILD_TARGET, resolve(flag(argv, "outfile") ?? join(ROOT, "dist", "switchyard")));
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
