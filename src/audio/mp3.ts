/**
 * MP3 through lamejs (npm `@breezystack/lamejs`, a maintained fork of the pure-JavaScript LAME
 * port; LGPL-3.0, used unmodified as a library). MPEG-2 Layer III at the model's 24 kHz, mono,
 * constant bit rate, so every frame is self-contained and the stream can be cut anywhere.
 */
import { Mp3Encoder as Lame } from "@breezystack/lamejs";
import type { AudioEncoder } from "./encoder";

export class Mp3Encoder implements AudioEncoder {
  readonly contentType = "audio/mpeg";
  private readonly lame: Lame;

  constructor(sampleRate: number, kbps = 64) {
    this.lame = new Lame(1, sampleRate, kbps);
  }

  start(): Uint8Array {
    return new Uint8Array(0);
  }

  encode(samples: Int16Array): Uint8Array {
    return samples.length ? new Uint8Array(this.lame.encodeBuffer(samples)) : new Uint8Array(0);
  }

  finish(): Uint8Array {
    return new Uint8Array(this.lame.flush());
  }

  close(): void {}
}
