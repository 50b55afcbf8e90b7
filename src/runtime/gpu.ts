/**
 * Is there an NVIDIA GPU with a working driver? Read from the kernel driver's /proc files (no
 * library is loaded to ask), with nvidia-smi, when installed, for the memory size.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface GpuInfo {
  driver: string;
  /** One entry per GPU the driver reports. */
  gpus: { name: string; memoryMiB: number | null }[];
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The driver and its GPUs, or null when no NVIDIA kernel driver is loaded. `procRoot` is /proc. */
export function probeNvidia(procRoot = "/proc", smi: () => string | null = nvidiaSmi): GpuInfo | null {
  const version = read(join(procRoot, "driver/nvidia/version"));
  if (version === null) return null;
  const driver = /Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)/.exec(version)?.[1] ?? "unknown";
  let ids: string[] = [];
  try {
    ids = readdirSync(join(procRoot, "driver/nvidia/gpus")).sort();
  } catch {
    ids = [];
  }
  const names = ids.map((id) => /^Model:\s*(.+)$/m.exec(read(join(procRoot, "driver/nvidia/gpus", id, "information")) ?? "")?.[1]?.trim() ?? "NVIDIA GPU");
  const memory = (smi() ?? "").split("\n").map((l) => Number(l.trim())).filter((n) => Number.isFinite(n) && n > 0);
  return { driver, gpus: names.map((name, i) => ({ name, memoryMiB: memory[i] ?? null })) };
}

function nvidiaSmi(): string | null {
  try {
    const r = Bun.spawnSync(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"], { stdout: "pipe", stderr: "ignore" });
    return r.exitCode === 0 ? r.stdout.toString() : null;
  } catch {
    return null;
  }
}
