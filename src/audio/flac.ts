/**
 * A small FLAC encoder (mono, 16-bit): fixed 4096-sample blocks, each subframe the best of
 * constant / fixed linear predictors of order 0–4 with Rice-coded residuals. Written here because
 * no maintained pure-JS/WASM FLAC encoder fits a single compiled binary; the format subset is
 * small and the test suite decodes the output with a reference decoder (libFLAC).
 *
 * FLAC is sent whole, not live: `encode` keeps the frames and `finish` returns the file, whose
 * STREAMINFO carries the exact total samples, MD5 of the audio and frame sizes. A live stream
 * would have to leave the total at 0 ("unknown", legal per the spec), and libsndfile, behind
 * Python's soundfile and many tools, refuses such files ("array is too big"); an estimated total
 * would be wrong. Clients that want audio while it is synthesised use pcm, wav, mp3 or opus.
 */
import { createHash, type Hash } from "node:crypto";
import type { AudioEncoder } from "./encoder";
import { concatBytes } from "./pcm";

export const FLAC_BLOCK = 4096;

class BitWriter {
  private buf = new Uint8Array(1024);
  private bytes = 0;
  private acc = 0;
  private nacc = 0;

  private ensure(n: number): void {
    if (this.bytes + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.bytes + n));
    next.set(this.buf.subarray(0, this.bytes));
    this.buf = next;
  }

  /** Writes the low `n` bits of `value` (n ≤ 24 per call). */
  write(value: number, n: number): void {
    if (n === 0) return;
    this.acc = (this.acc << n) | (value & ((1 << n) - 1));
    this.nacc += n;
    this.ensure(4);
    while (this.nacc >= 8) {
      this.nacc -= 8;
      this.buf[this.bytes++] = (this.acc >>> this.nacc) & 0xff;
    }
    this.acc &= (1 << this.nacc) - 1;
  }

  writeLong(value: number, n: number): void {
    while (n > 24) {
      n -= 16;
      this.write(Math.floor(value / 2 ** n) & 0xffff, 16);
    }
    this.write(value % 2 ** n, n);
  }

  unary(zeros: number): void {
    while (zeros >= 24) {
      this.write(0, 24);
      zeros -= 24;
    }
    this.write(1, zeros + 1);
  }

  alignByte(): void {
    if (this.nacc > 0) this.write(0, 8 - this.nacc);
  }

  get length(): number {
    return this.bytes;
  }

  finish(): Uint8Array {
    this.alignByte();
    return this.buf.slice(0, this.bytes);
  }

  view(): Uint8Array {
    return this.buf.subarray(0, this.bytes);
  }
}

function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** FLAC's UTF-8-like coding of the frame number. */
function utf8Number(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  let lead = 0x80;
  let cap = 0x3f;
  while (n > cap) {
    bytes.unshift(0x80 | (n & 0x3f));
    n = Math.floor(n / 64);
    lead = (lead >> 1) | 0x80;
    cap >>= 1;
  }
  bytes.unshift(((lead << 1) & 0xff) | n);
  return bytes;
}

/** Residuals of the fixed predictor of `order` (FLAC spec, section "FIXED"). */
function fixedResidual(x: Int16Array, order: number): Int32Array {
  const r = new Int32Array(x.length - order);
  for (let i = order; i < x.length; i++) {
    let p = 0;
    switch (order) {
      case 0: p = 0; break;
      case 1: p = x[i - 1]!; break;
      case 2: p = 2 * x[i - 1]! - x[i - 2]!; break;
      case 3: p = 3 * x[i - 1]! - 3 * x[i - 2]! + x[i - 3]!; break;
      default: p = 4 * x[i - 1]! - 6 * x[i - 2]! + 4 * x[i - 3]! - x[i - 4]!;
    }
    r[i - order] = x[i]! - p;
  }
  return r;
}

/** Best Rice parameter for one partition, and its cost in bits. */
function riceParam(r: Int32Array): { k: number; bits: number } {
  let sum = 0;
  for (let i = 0; i < r.length; i++) {
    const v = r[i]!;
    sum += v >= 0 ? 2 * v : -2 * v - 1;
  }
  const mean = r.length ? sum / r.length : 0;
  let k = mean > 1 ? Math.min(14, Math.max(0, Math.floor(Math.log2(mean)))) : 0;
  const cost = (kk: number) => {
    let bits = r.length * (kk + 1);
    for (let i = 0; i < r.length; i++) {
      const v = r[i]!;
      bits += Math.floor((v >= 0 ? 2 * v : -2 * v - 1) / 2 ** kk);
    }
    return bits;
  };
  let bits = cost(k);
  if (k < 14 && cost(k + 1) < bits) bits = cost(++k);
  return { k, bits };
}

function writeSubframe(w: BitWriter, x: Int16Array): void {
  if (x.every((v) => v === x[0])) {
    w.write(0, 1);
    w.write(0b000000, 6);
    w.write(0, 1);
    w.write(x[0]! & 0xffff, 16);
    return;
  }
  let best = { order: 0, res: fixedResidual(x, 0), k: 0, bits: Infinity };
  for (let order = 0; order <= Math.min(4, x.length - 1); order++) {
    const res = fixedResidual(x, order);
    const { k, bits } = riceParam(res);
    if (bits + order * 16 < best.bits) best = { order, res, k, bits: bits + order * 16 };
  }
  w.write(0, 1);
  w.write(0b001000 | best.order, 6);
  w.write(0, 1);
  for (let i = 0; i < best.order; i++) w.write(x[i]! & 0xffff, 16);
  w.write(0b00, 2); // Rice coding, 4-bit parameters
  w.write(0, 4); // partition order 0: one partition
  w.write(best.k, 4);
  for (let i = 0; i < best.res.length; i++) {
    const v = best.res[i]!;
    const u = v >= 0 ? 2 * v : -2 * v - 1;
    const q = Math.floor(u / 2 ** best.k);
    w.unary(q);
    w.write(u & ((1 << best.k) - 1), best.k);
  }
}

export interface StreamInfo {
  sampleRate: number;
  totalSamples: number;
  /** MD5 of the samples as signed 16-bit little-endian bytes. */
  md5: Uint8Array;
  minFrameBytes: number;
  maxFrameBytes: number;
}

/** "fLaC" and the one metadata block, STREAMINFO (34 bytes), marked as the last block. */
export function flacHeader(info: StreamInfo): Uint8Array {
  const w = new BitWriter();
  w.write(0x664c6143 >>> 8, 24); // "fLa"
  w.write(0x43, 8); // "C"
  w.write(1, 1); // last metadata block
  w.write(0, 7); // STREAMINFO
  w.write(34, 24);
  w.write(FLAC_BLOCK, 16); // min block size (the last block may be shorter, as the spec allows)
  w.write(FLAC_BLOCK, 16); // max block size
  w.write(info.minFrameBytes, 24);
  w.write(info.maxFrameBytes, 24);
  w.write(info.sampleRate, 20);
  w.write(0, 3); // channels - 1
  w.write(15, 5); // bits per sample - 1
  w.writeLong(info.totalSamples, 36);
  for (const b of info.md5) w.write(b, 8);
  return w.finish();
}

export class FlacEncoder implements AudioEncoder {
  readonly contentType = "audio/flac";
  readonly wholeFile = true;
  private pending = new Int16Array(0);
  private frameNumber = 0;
  private frames: Uint8Array[] = [];
  private totalSamples = 0;
  private minFrame = Infinity;
  private maxFrame = 0;
  private md5: Hash = createHash("md5");

  constructor(private readonly sampleRate: number) {}

  /** Nothing yet: the header needs the whole audio (see the file comment). */
  start(): Uint8Array {
    return new Uint8Array(0);
  }

  private frame(x: Int16Array): Uint8Array {
    const w = new BitWriter();
    w.write(0b11111111111110, 14);
    w.write(0, 1); // reserved
    w.write(0, 1); // fixed block size
    const full = x.length === FLAC_BLOCK;
    w.write(full ? 0b1100 : 0b0111, 4); // 4096, or 16-bit (size-1) at the header end
    const rateCode = { 8000: 0b0100, 16000: 0b0101, 22050: 0b0110, 24000: 0b0111, 32000: 0b1000, 44100: 0b1001, 48000: 0b1010 }[this.sampleRate] ?? 0;
    w.write(rateCode, 4);
    w.write(0b0000, 4); // mono
    w.write(0b100, 3); // 16 bits per sample
    w.write(0, 1);
    for (const b of utf8Number(this.frameNumber++)) w.write(b, 8);
    if (!full) w.write(x.length - 1, 16);
    w.write(crc8(w.view()), 8);
    writeSubframe(w, x);
    w.alignByte();
    w.write(crc16(w.view()), 16);
    return w.finish();
  }

  private keep(frame: Uint8Array, samples: Int16Array): void {
    this.frames.push(frame);
    this.totalSamples += samples.length;
    this.minFrame = Math.min(this.minFrame, frame.length);
    this.maxFrame = Math.max(this.maxFrame, frame.length);
    // MD5 is over little-endian sample bytes; typed arrays are little-endian on every platform Bun runs on.
    this.md5.update(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  }

  /** Encodes whole blocks as they fill; the bytes come out of finish(). */
  encode(samples: Int16Array): Uint8Array {
    const all = new Int16Array(this.pending.length + samples.length);
    all.set(this.pending);
    all.set(samples, this.pending.length);
    let at = 0;
    for (; at + FLAC_BLOCK <= all.length; at += FLAC_BLOCK) {
      const block = all.subarray(at, at + FLAC_BLOCK);
      this.keep(this.frame(block), block);
    }
    this.pending = all.slice(at);
    return new Uint8Array(0);
  }

  /** The whole file: STREAMINFO with the exact length, MD5 and frame sizes, then every frame. */
  finish(): Uint8Array {
    if (this.pending.length > 0) this.keep(this.frame(this.pending), this.pending);
    this.pending = new Int16Array(0);
    const header = flacHeader({
      sampleRate: this.sampleRate,
      totalSamples: this.totalSamples,
      md5: this.totalSamples > 0 ? new Uint8Array(this.md5.digest()) : new Uint8Array(16),
      minFrameBytes: this.frames.length ? this.minFrame : 0,
      maxFrameBytes: this.maxFrame,
    });
    const file = concatBytes([header, ...this.frames]);
    this.frames = [];
    return file;
  }

  close(): void {
    this.frames = [];
  }
}
