/**
 * Reading a file named in configuration (SWITCHYARD_CATALOG, SWITCHYARD_ROUTES,
 * SWITCHYARD_MODEL_ALIASES, an upstream's TLS files; docs/configuration.md, "Settings"): off the event
 * loop, regular files only, at most CONFIG_FILE_MAX_BYTES. The file is opened without blocking
 * and checked on the open descriptor, so a FIFO, a directory or a device put in its place is
 * refused at once, never waited on; an error names what is wrong, never what the file holds.
 */
import { constants } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";

/** The largest file read: far above any catalog, routes file or CA bundle (Mozilla's is ~220 KB). */
export const CONFIG_FILE_MAX_BYTES = 4 * 1024 * 1024;

export class ConfigFileError extends Error {}

/** What a non-regular file is, in words. */
function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}

function cannotOpen(e: unknown): ConfigFileError {
  const code = (e as NodeJS.ErrnoException)?.code;
  const why = code === "ENOENT" ? "no such file" : code === "EACCES" || code === "EPERM" ? "permission denied" : code === "ELOOP" ? "too many symbolic links" : (code ?? "cannot open it");
  return new ConfigFileError(why);
}

/** The file's text (UTF-8); throws ConfigFileError saying why it cannot be used. */
export async function readConfigFile(path: string, maxBytes = CONFIG_FILE_MAX_BYTES): Promise<string> {
  let fh: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw cannotOpen(e);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new ConfigFileError(`${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw new ConfigFileError(`larger than ${maxBytes} bytes`);
    // One byte more than allowed: a file that grew since the stat is refused, not cut.
    const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let length = 0;
    while (length < buf.length) {
      const { bytesRead } = await fh.read(buf, length, buf.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new ConfigFileError(`larger than ${maxBytes} bytes`);
    return buf.toString("utf8", 0, length);
  } catch (e) {
    if (e instanceof ConfigFileError) throw e;
    throw new ConfigFileError((e as NodeJS.ErrnoException)?.code ?? "cannot read it");
  } finally {
    await fh.close().catch(() => {});
  }
}

/** A stamp that changes when the file is replaced or written (null when it cannot be stat'ed now). */
export async function configFileStamp(path: string): Promise<string | null> {
  try {
    const st = await stat(path);
    return `${st.mtimeMs}:${st.size}:${st.ino}`;
  } catch {
    return null;
  }
}
