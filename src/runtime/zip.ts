/**
 * Reading single entries out of a zip archive (a Python wheel) without loading it whole: the
 * central directory is read from the end of the file, and each wanted entry is inflated from its
 * offset straight to disk. Stored and deflated entries; ZIP64 sizes and offsets (wheels of
 * NVIDIA's libraries run to hundreds of megabytes).
 */
import { closeSync, createReadStream, createWriteStream, fstatSync, openSync, readSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createInflateRaw } from "node:zlib";

export class ZipError extends Error {}

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, position);
  if (n !== length) throw new ZipError("truncated archive");
  return buf;
}

/** The archive's entries, from its central directory. */
export function listZip(path: string): ZipEntry[] {
  const fd = openSync(path, "r");
  try {
    const fileSize = fstatSync(fd).size;
    const tailLength = Math.min(fileSize, 65_535 + 22);
    const tail = readAt(fd, fileSize - tailLength, tailLength);
    let eocd = -1;
    for (let i = tail.length - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new ZipError("not a zip archive (no end of central directory)");
    let count = tail.readUInt16LE(eocd + 10);
    let cdSize = tail.readUInt32LE(eocd + 12);
    let cdOffset = tail.readUInt32LE(eocd + 16);
    // ZIP64: the locator just before the end record points at the ZIP64 end record.
    if (eocd >= 20 && tail.readUInt32LE(eocd - 20) === 0x07064b50) {
      const z64 = readAt(fd, Number(tail.readBigUInt64LE(eocd - 20 + 8)), 56);
      if (z64.readUInt32LE(0) !== 0x06064b50) throw new ZipError("bad ZIP64 end record");
      count = Number(z64.readBigUInt64LE(32));
      cdSize = Number(z64.readBigUInt64LE(40));
      cdOffset = Number(z64.readBigUInt64LE(48));
    }
    const cd = readAt(fd, cdOffset, cdSize);
    const entries: ZipEntry[] = [];
    let p = 0;
    for (let i = 0; i < count; i++) {
      if (cd.readUInt32LE(p) !== 0x02014b50) throw new ZipError("bad central directory entry");
      const method = cd.readUInt16LE(p + 10);
      let compressedSize = cd.readUInt32LE(p + 20);
      let size = cd.readUInt32LE(p + 24);
      const nameLength = cd.readUInt16LE(p + 28);
      const extraLength = cd.readUInt16LE(p + 30);
      const commentLength = cd.readUInt16LE(p + 32);
      let localHeaderOffset = cd.readUInt32LE(p + 42);
      const name = cd.toString("utf8", p + 46, p + 46 + nameLength);
      // ZIP64 extra field: the 64-bit values of whichever fields read 0xffffffff, in this order.
      let e = p + 46 + nameLength;
      const extraEnd = e + extraLength;
      while (e + 4 <= extraEnd) {
        const id = cd.readUInt16LE(e);
        const len = cd.readUInt16LE(e + 2);
        if (id === 0x0001) {
          let q = e + 4;
          if (size === 0xffffffff) (size = Number(cd.readBigUInt64LE(q))), (q += 8);
          if (compressedSize === 0xffffffff) (compressedSize = Number(cd.readBigUInt64LE(q))), (q += 8);
          if (localHeaderOffset === 0xffffffff) localHeaderOffset = Number(cd.readBigUInt64LE(q));
        }
        e += 4 + len;
      }
      entries.push({ name, method, compressedSize, size, localHeaderOffset });
      p = extraEnd + commentLength;
    }
    return entries;
  } finally {
    closeSync(fd);
  }
}

/** Writes one entry's contents to `dest`. */
export async function extractEntry(path: string, entry: ZipEntry, dest: string): Promise<void> {
  if (entry.method !== 0 && entry.method !== 8) throw new ZipError(`${entry.name}: unsupported compression method ${entry.method}`);
  const fd = openSync(path, "r");
  let dataStart: number;
  try {
    const local = readAt(fd, entry.localHeaderOffset, 30);
    if (local.readUInt32LE(0) !== 0x04034b50) throw new ZipError(`${entry.name}: bad local header`);
    dataStart = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  } finally {
    closeSync(fd);
  }
  const out = createWriteStream(dest, { mode: 0o755 });
  if (entry.compressedSize === 0) {
    out.end();
    await new Promise((resolve, reject) => out.on("finish", resolve).on("error", reject));
    return;
  }
  const input = createReadStream(path, { start: dataStart, end: dataStart + entry.compressedSize - 1 });
  if (entry.method === 0) await pipeline(input, out);
  else await pipeline(input, createInflateRaw(), out);
}
