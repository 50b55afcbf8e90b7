/**
 * The audio formats of POST /v1/audio/speech, each a streaming encoder: `start()` bytes go out
 * first, `encode()` takes each sentence's samples as they are synthesised and returns whatever
 * complete frames/pages it can, `finish()` flushes the rest (FLAC keeps everything for `finish()`,
 * whose header needs the whole audio: see flac.ts). All are pure JS or WebAssembly, so
 * they work inside the single compiled binary (no ffmpeg, no native addons).
 */
import { FlacEncoder } from "./flac";
import { Mp3Encoder } from "./mp3";
import { loadOpus, OggOpusEncoder } from "./opus";
import { int16Bytes } from "./pcm";
import { wavHeader } from "./wav";

export const SUPPORTED_FORMATS = ["mp3", "wav", "opus", "flac", "pcm"] as const;
export type AudioFormat = (typeof SUPPORTED_FORMATS)[number];

export interface AudioEncoder {
  readonly contentType: string;
  /** The format needs the whole audio before its first byte (FLAC): it is sent once complete. */
  readonly wholeFile?: boolean;
  start(): Uint8Array;
  encode(samples: Int16Array): Uint8Array;
  finish(): Uint8Array;
  /** Frees native memory; safe to call more than once, and after finish(). */
  close(): void;
}

class RawEncoder implements AudioEncoder {
  constructor(readonly contentType: string, private readonly header: Uint8Array) {}
  start(): Uint8Array {
    return this.header;
  }
  encode(samples: Int16Array): Uint8Array {
    return int16Bytes(samples);
  }
  finish(): Uint8Array {
    return new Uint8Array(0);
  }
  close(): void {}
}

export async function createEncoder(format: AudioFormat, sampleRate: number): Promise<AudioEncoder> {
  switch (format) {
    case "mp3": return new Mp3Encoder(sampleRate);
    case "opus": return new OggOpusEncoder(await loadOpus(), sampleRate);
    case "flac": return new FlacEncoder(sampleRate);
    case "wav": return new RawEncoder("audio/wav", wavHeader(sampleRate));
    case "pcm": return new RawEncoder("audio/pcm", new Uint8Array(0));
  }
}
