/**
 * Just enough of protobuf's wire format to edit an ONNX model without a protobuf library: a
 * message is read as its fields in order (number, wire type, where its bytes are), and written back
 * by copying the fields it keeps byte for byte and appending new ones. Nothing is decoded that is
 * not asked for, so fields this code does not know travel unchanged.
 */

export const VARINT = 0;
export const FIXED64 = 1;
export const BYTES = 2;
export const FIXED32 = 5;

export interface Field {
  no: number;
  wire: number;
  /** The whole field (key included), for copying it unchanged. */
  start: number;
  end: number;
  /** VARINT: its value (exact below 2^53). BYTES: where the payload starts and ends. */
  value: number;
  from: number;
  to: number;
}

export class ProtobufError extends Error {}

/**
 * A varint's value. Past 7 bytes (53 bits, what a double holds exactly) it is read as the int64 it
 * encodes: a negative int64 is written in 10 bytes as 2^64 + n, which a double would round to 2^64.
 */
function varint(buf: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    const b = buf[i]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [i - at < 7 ? value : wideVarint(buf, at, i), i + 1];
    scale *= 128;
  }
  throw new ProtobufError(`truncated varint at byte ${at}`);
}

function wideVarint(buf: Uint8Array, at: number, last: number): number {
  let v = 0n;
  for (let i = last; i >= at; i--) v = (v << 7n) | BigInt(buf[i]! & 0x7f);
  return Number(BigInt.asIntN(64, v));
}

/** The fields of the message in `buf[from, to)`, in the order they are written. */
export function readFields(buf: Uint8Array, from = 0, to = buf.length): Field[] {
  const fields: Field[] = [];
  let at = from;
  while (at < to) {
    const start = at;
    const [key, afterKey] = varint(buf, at);
    const no = Math.floor(key / 8);
    const wire = key % 8;
    let value = 0;
    let payloadFrom = afterKey;
    if (wire === VARINT) [value, at] = varint(buf, afterKey);
    else if (wire === FIXED64) at = afterKey + 8;
    else if (wire === FIXED32) at = afterKey + 4;
    else if (wire === BYTES) {
      const [len, afterLen] = varint(buf, afterKey);
      payloadFrom = afterLen;
      at = afterLen + len;
    } else throw new ProtobufError(`unsupported wire type ${wire} at byte ${start}`);
    if (at > to) throw new ProtobufError(`field ${no} at byte ${start} runs past its message`);
    fields.push({ no, wire, start, end: at, value, from: payloadFrom, to: wire === BYTES ? at : payloadFrom });
  }
  return fields;
}

const utf8 = new TextDecoder();
const encoder = new TextEncoder();

export function text(buf: Uint8Array, f: Field): string {
  return utf8.decode(buf.subarray(f.from, f.to));
}

/** The values of a repeated integer field, packed (one BYTES field) or not (VARINT fields). */
export function integers(buf: Uint8Array, fields: Field[], no: number): number[] {
  const out: number[] = [];
  for (const f of fields) {
    if (f.no !== no) continue;
    if (f.wire === VARINT) out.push(f.value);
    else if (f.wire === BYTES) for (let at = f.from; at < f.to; ) {
      let v: number;
      [v, at] = varint(buf, at);
      out.push(v);
    }
  }
  return out;
}

/** Bytes of new fields, gathered and joined once. */
export class Writer {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  raw(bytes: Uint8Array): this {
    this.parts.push(bytes);
    this.size += bytes.length;
    return this;
  }

  /** An integer; a negative one as the int64 it is, 2^64 + v in 10 bytes (hence BigInt: past 2^53). */
  private varint(v: number): void {
    const out: number[] = [];
    for (let u = BigInt.asUintN(64, BigInt(v)); ; u >>= 7n) {
      if (u < 128n) {
        out.push(Number(u));
        break;
      }
      out.push(Number(u & 0x7fn) | 0x80);
    }
    this.raw(Uint8Array.from(out));
  }

  int(no: number, v: number): this {
    this.varint(no * 8 + VARINT);
    this.varint(v);
    return this;
  }

  bytes(no: number, payload: Uint8Array): this {
    this.varint(no * 8 + BYTES);
    this.varint(payload.length);
    return this.raw(payload);
  }

  string(no: number, s: string): this {
    return this.bytes(no, encoder.encode(s));
  }

  /** A float field (wire type fixed32, little-endian). */
  float32(no: number, v: number): this {
    this.varint(no * 8 + FIXED32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    return this.raw(b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}
