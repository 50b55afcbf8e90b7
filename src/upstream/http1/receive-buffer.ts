/**
 * A cap on the kernel's receive buffer of an upstream socket (SO_RCVBUF). While a relay waits for
 * a slow client its upstream socket is paused, and the kernel keeps taking the upstream's bytes
 * into that buffer, which Linux grows to megabytes for a fast sender; once resumed, one socket read
 * hands the process all of it at once (Bun reads up to ~1 MB): a fast upstream cost each stream
 * about that much at its peak (test/bench/stream-memory.bench.ts). Capped, the kernel holds at
 * most about twice the cap, so each read brings at most that much, and TCP's window stalls the
 * upstream instead.
 *
 * Set through setsockopt(2) with bun:ffi on Linux with glibc; elsewhere (or if the socket has no
 * descriptor) nothing changes.
 */
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;

type SetSockOpt = (fd: number, level: number, name: number, value: Int32Array, size: number) => number;
let setsockopt: SetSockOpt | null | undefined;

function load(): SetSockOpt | null {
  try {
    const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 } });
    return (fd, level, name, value, size) => libc.symbols.setsockopt(fd, level, name, ptr(value), size) as number;
  } catch {
    return null;
  }
}

/**
 * Caps the socket's receive buffer at `bytes` (0: leaves the system's own, autotuned); says whether
 * the cap was set.
 */
export function capReceiveBuffer(socket: object, bytes: number): boolean {
  const fd = (socket as { fd?: unknown }).fd;
  if (bytes <= 0 || typeof fd !== "number" || fd < 0) return false;
  if (setsockopt === undefined) setsockopt = process.platform === "linux" ? load() : null;
  if (setsockopt === null) return false;
  try {
    return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, new Int32Array([bytes]), 4) === 0;
  } catch {
    return false;
  }
}
