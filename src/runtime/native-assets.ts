/**
 * The shared libraries embedded in the compiled binary, which src/runtime/native.ts extracts and
 * pre-loads. This source is what development runs see: nothing to extract, because node_modules is
 * on disk and each addon finds its library through its own rpath. When building the executable,
 * build.ts replaces this module's contents with `with { type: "file" }` imports of the target
 * platform's libraries (see nativeAssetsModule in build.ts), keeping the same exported shape.
 */

export interface NativeAsset {
  /** Subdirectory of the cache dir: the package the library belongs to. */
  group: "onnxruntime" | "sharp";
  /** File name on disk: the library's soname, so the addons' NEEDED entries match it. */
  name: string;
  /** Where the bundler put the file inside the binary (a /$bunfs/ path). */
  embeddedPath: string;
  /** Size in bytes, to tell a complete extracted copy from a stale or foreign one. */
  size: number;
  /**
   * A C symbol the library exports, so it can be dlopen'ed before its addon loads (bun:ffi
   * needs one symbol to open a library). Absent: extracted only, loaded later by its owner
   * (ONNX Runtime execution-provider libraries, which it looks for next to itself).
   */
  preloadSymbol?: string;
}

export interface NativeAssets {
  /** Hash of the embedded libraries' contents; null when not running as the compiled binary. */
  bundleId: string | null;
  /** The Bun target the binary was built for, e.g. "bun-linux-x64". */
  target: string | null;
  assets: NativeAsset[];
}

export const nativeAssets: NativeAssets = { bundleId: null, target: null, assets: [] };
