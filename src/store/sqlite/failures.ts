/**
 * Which SQLite errors mean "the store cannot write right now" (retry later, answer 503) rather
 * than "this write is wrong" (a bug or a broken rule, which only that write pays for).
 */
import { StoreUnavailable } from "../../billing/ledger-store";
import { serviceUnavailable } from "../../errors";

/** SQLite's primary result codes that say nothing about the write itself, only about the disk or locks. */
const UNAVAILABLE: Record<string, StoreUnavailable["reason"]> = {
  SQLITE_FULL: "full",
  SQLITE_BUSY: "locked",
  SQLITE_LOCKED: "locked",
  SQLITE_IOERR: "io",
  SQLITE_READONLY: "io",
  SQLITE_CANTOPEN: "io",
  SQLITE_NOMEM: "io",
  SQLITE_PROTOCOL: "io",
};

/** bun:sqlite names extended codes too ("SQLITE_IOERR_FSYNC"); the primary code is their prefix. */
function primaryCode(e: unknown): string | null {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return null;
  const second = code.indexOf("_", "SQLITE_".length);
  return second < 0 ? code : code.slice(0, second);
}

/** The StoreUnavailable an error stands for, or null when it is not a storage condition. */
export function storageFailure(e: unknown): StoreUnavailable | null {
  if (e instanceof StoreUnavailable) return e;
  const code = primaryCode(e);
  const reason = code ? UNAVAILABLE[code] : undefined;
  return reason ? new StoreUnavailable(reason, `${code}: ${(e as Error).message}`) : null;
}

/** SQLITE_IOERR and its extended codes (a failed read, write or fsync of the files). */
export function isIoError(e: unknown): boolean {
  return primaryCode(e) === "SQLITE_IOERR";
}

export function isBusy(e: unknown): boolean {
  const code = primaryCode(e);
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
}

/**
 * Runs a direct write of the serving connection (admin changes to accounts and keys, deleting a
 * stored response): a disk that is full or a lock held by another process is answered with 503
 * service_unavailable, not with the storage error's own text.
 */
export function writeOrUnavailable<T>(write: () => T): T {
  try {
    return write();
  } catch (e) {
    if (storageFailure(e)) throw serviceUnavailable();
    throw e;
  }
}
