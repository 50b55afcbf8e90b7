/**
 * `switchyard version` (also --version, -v): the release, the commit and build date, and the Bun
 * and ONNX Runtime versions inside. The compiled binary knows them from build time; from source
 * they come from git and node_modules. Loads no native library, opens nothing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildInfo } from "../runtime/build-info";
import { SERVICE_NAME, VERSION } from "../version";

export interface VersionReport {
  version: string;
  commit: string;
  built: string;
  bun: string;
  onnxruntime: string;
  platform: string;
}

const SOURCE_ROOT = join(import.meta.dir, "..", "..");

function fromGit(): string {
  const r = Bun.spawnSync(["git", "-C", SOURCE_ROOT, "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"], { stdout: "pipe", stderr: "ignore" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : "unknown";
}

function ortFromSource(): string {
  try {
    return JSON.parse(readFileSync(join(SOURCE_ROOT, "node_modules", "onnxruntime-node", "package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

export function versionReport(): VersionReport {
  const compiled = buildInfo.builtAt !== null;
  return {
    version: VERSION,
    commit: buildInfo.commit ?? (compiled ? "unknown" : fromGit()),
    built: buildInfo.builtAt ?? "from source",
    bun: Bun.version,
    onnxruntime: buildInfo.onnxruntime ?? ortFromSource(),
    platform: `${process.platform}-${process.arch}`,
  };
}

export function formatVersion(r: VersionReport): string {
  return `${SERVICE_NAME} ${r.version}\ncommit       ${r.commit}\nbuilt        ${r.built}\nbun          ${r.bun}\nonnxruntime  ${r.onnxruntime}\nplatform     ${r.platform}\n`;
}
