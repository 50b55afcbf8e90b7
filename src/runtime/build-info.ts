/**
 * What the binary was built from. build.ts replaces this module inside the compiled binary with
 * the commit, build time and versions it saw; from source these stay null and `switchyard
 * version` reads git and the installed packages instead (src/cli/version.ts).
 */
export interface BuildInfo {
  commit: string | null;
  /** ISO 8601 UTC. */
  builtAt: string | null;
  /** The Bun target, e.g. "bun-linux-arm64". */
  target: string | null;
  onnxruntime: string | null;
}

export const buildInfo: BuildInfo = { commit: null, builtAt: null, target: null, onnxruntime: null };
