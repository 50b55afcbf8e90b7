/**
 * Opus in Ogg (RFC 7845) from libopus 1.4 compiled to WebAssembly (npm `opusscript`, MIT;
 * libopus is BSD). The emscripten module is instantiated from the embedded .wasm bytes, so it
 * works inside the single compiled binary with no native addon. 20 ms frames at the model's
 * 24 kHz; one Ogg page per encode() call, so each sentence's audio goes out as soon as it is done.
 */
import wasmPath from "opusscript/build/opusscript_native_wasm.wasm" with { type: "file" };
import createModule from "opusscript/build/opusscript_native_wasm.js";
import { HEADER_TYPE, OggWriter } from "./ogg";
import { concatBytes } from "./pcm";
import type { AudioEncoder } from "./encoder";

interface OpusNative {
  ready: Promise<unknown>;
  HEAPU16: Uint16Array;
  HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  OpusScriptHandler: {
    new (rate: number, channels: number, application: number): OpusHandler;
    destroy_handler(h: OpusHandler): void;
  };
}
interface OpusHandler {
  _encode(pcmPtr: number, samples: number, outPtr: number, frameSize: number): number;
  _encoder_ctl(ctl: number, arg: number): number;
}

const APPLICATION_AUDIO = 2049;
const OPUS_SET_BITRATE = 4002;
const MAX_PACKET = 4000;
/** Encoder lookahead at 48 kHz that players skip (libopus: 6.5 ms for the audio application). */
export const PRE_SKIP = 312;

let native: Promise<OpusNative> | null = null;

/** Loads (once) and returns the libopus module; call before creating encoders. */
export function loadOpus(): Promise<OpusNative> {
  native ??= (async () => {
    const wasmBinary = new Uint8Array(await Bun.file(wasmPath).arrayBuffer());
    const mod = (createModule as unknown as (m: { wasmBinary: Uint8Array }) => OpusNative)({ wasmBinary });
    await mod.ready;
    return mod;
  })();
  return native;
}

function opusHead(sampleRate: number): Uint8Array {
  const h = new Uint8Array(19);
  const v = new DataView(h.buffer);
  h.set(new TextEncoder().encode("OpusHead"), 0);
  h[8] = 1; // version
  h[9] = 1; // channels
  v.setUint16(10, PRE_SKIP, true);
  v.setUint32(12, sampleRate, true); // original input rate, informational
  v.setInt16(16, 0, true); // output gain
  h[18] = 0; // channel mapping family
  return h;
}

function opusTags(): Uint8Array {
  const vendor = new TextEncoder().encode("switchyard (libopus 1.4)");
  const t = new Uint8Array(8 + 4 + vendor.length + 4);
  const v = new DataView(t.buffer);
  t.set(new TextEncoder().encode("OpusTags"), 0);
  v.setUint32(8, vendor.length, true);
  t.set(vendor, 12);
  v.setUint32(12 + vendor.length, 0, true); // no user comments
  return t;
}

export class OggOpusEncoder implements AudioEncoder {
  readonly contentType = "audio/ogg";
  private readonly frame: number;
  private readonly handler: OpusHandler;
  private readonly inPtr: number;
  private readonly outPtr: number;
  private readonly ogg = new OggWriter((Math.random() * 0xffffffff) >>> 0);
  private pending = new Int16Array(0);
  /** Samples encoded so far, at the input rate. */
  private encoded = 0;
  private closed = false;

  constructor(private readonly mod: OpusNative, private readonly sampleRate: number, bitrate = 32_000) {
    this.frame = sampleRate / 50;
    this.handler = new mod.OpusScriptHandler(sampleRate, 1, APPLICATION_AUDIO);
    this.handler._encoder_ctl(OPUS_SET_BITRATE, bitrate);
    this.inPtr = mod._malloc(this.frame * 4);
    this.outPtr = mod._malloc(MAX_PACKET);
  }

  start(): Uint8Array {
    return concatBytes([this.ogg.page([opusHead(this.sampleRate)], 0n, HEADER_TYPE.bos), this.ogg.page([opusTags()], 0n)]);
  }

  private granule(samples: number): bigint {
    return BigInt(Math.round((samples * 48_000) / this.sampleRate));
  }

  private packet(frame: Int16Array): Uint8Array {
    // opusscript's C++ side expects each byte of the s16le frame in its own 16-bit slot and
    // packs pairs into samples in place (that is how its own JS wrapper passes a Buffer).
    const slots = this.mod.HEAPU16.subarray(this.inPtr >> 1, (this.inPtr >> 1) + frame.length * 2);
    for (let i = 0; i < frame.length; i++) {
      const v = frame[i]! & 0xffff;
      slots[2 * i] = v & 0xff;
      slots[2 * i + 1] = v >> 8;
    }
    const n = this.handler._encode(this.inPtr, frame.length, this.outPtr, this.frame);
    if (n < 0) throw new Error(`opus encode failed (${n})`);
    this.encoded += this.frame;
    return this.mod.HEAPU8.slice(this.outPtr, this.outPtr + n);
  }

  /** Encodes whole frames; pages hold at most 50 packets (1 s) to keep lacing small. */
  private pages(samples: Int16Array, last: boolean): Uint8Array {
    const all = new Int16Array(this.pending.length + samples.length);
    all.set(this.pending);
    all.set(samples, this.pending.length);
    let whole = Math.floor(all.length / this.frame) * this.frame;
    let input = all;
    if (last && whole < all.length) {
      input = new Int16Array(whole + this.frame);
      input.set(all);
      whole = input.length;
    }
    const realEnd = this.encoded + all.length; // in input samples, before padding
    const out: Uint8Array[] = [];
    let packets: Uint8Array[] = [];
    for (let at = 0; at < whole; at += this.frame) {
      packets.push(this.packet(input.subarray(at, at + this.frame)));
      const done = at + this.frame >= whole;
      if (packets.length === 50 || done) {
        const eos = last && done;
        // The final granule marks where real audio ends, so players trim the zero padding.
        const granule = eos ? this.granule(realEnd) + BigInt(PRE_SKIP) : this.granule(this.encoded) + BigInt(PRE_SKIP);
        out.push(this.ogg.page(packets, granule, eos ? HEADER_TYPE.eos : 0));
        packets = [];
      }
    }
    if (last && whole === 0) out.push(this.ogg.page([], this.granule(this.encoded) + BigInt(PRE_SKIP), HEADER_TYPE.eos));
    this.pending = last ? new Int16Array(0) : all.slice(whole);
    return concatBytes(out);
  }

  encode(samples: Int16Array): Uint8Array {
    return this.pages(samples, false);
  }

  finish(): Uint8Array {
    const bytes = this.pages(new Int16Array(0), true);
    this.close();
    return bytes;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.mod.OpusScriptHandler.destroy_handler(this.handler);
    this.mod._free(this.inPtr);
    this.mod._free(this.outPtr);
  }
}
