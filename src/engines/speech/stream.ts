/**
 * One speech request as a metered source (metering/metered-stream.ts): chunks are synthesised in
 * order (the next one queued while the current one is encoded), each chunk's audio is encoded and
 * written as soon as it is ready, so the first bytes leave after the first sentence. The first
 * chunk is synthesised before the stream exists (startSpeechStream), so a request that cannot
 * start (queue full, engine failure, client gone) still gets a proper error status. Each write
 * carries the input characters whose audio it completes: a client that leaves pays for the
 * sentences whose audio its connection took; a failed synthesis is never billed.
 */
import type { AudioEncoder } from "../../audio/encoder";
import { concatBytes, floatToInt16 } from "../../audio/pcm";
import type { SpeechChunk } from "../../text/frontend";
import type { Consumption } from "../../billing/ledger-store";
import type { MeteredOut, MeteredSource, StreamEnding } from "../../metering/metered-stream";
import { DomainError } from "../../errors";
import type { Log } from "../../log";
import { SAMPLE_RATE, type SpeechEngine } from "./engine";
import { shapeChunk } from "./silence";

export interface SpeechPlan {
  engine: SpeechEngine;
  chunks: SpeechChunk[];
  voices: string[];
  speed: number;
  priority: boolean;
  /** Whose request it is: accounts take turns at the model (see ../scheduler). */
  account?: string;
  encoder: AudioEncoder;
  /** Wraps each wait on the engine (the request's engine-time accounting). */
  timed?: <T>(work: Promise<T>) => Promise<T>;
}

/**
 * Encoded audio queued for a client above which synthesis of the next chunk waits: a client that
 * stops reading stops the engine (one chunk is prefetched), instead of the whole text being
 * synthesised into memory.
 */
export const SPEECH_HIGH_WATER_BYTES = 32 * 1024;
/** A client that takes none of its queued audio for this long is cut off. */
export const SPEECH_STALL_TIMEOUT_MS = 120_000;

/** The client disconnected before any audio was sent. */
export class ClientGoneError extends Error {
  constructor() {
    super("client disconnected before any audio");
    this.name = "AbortError";
  }
}

/** The chunks in flight: synthesis of chunk i, submitted ahead of its turn. */
class Synthesis {
  private readonly abort = new AbortController();
  private readonly timed: <T>(work: Promise<T>) => Promise<T>;

  constructor(readonly plan: SpeechPlan) {
    this.timed = plan.timed ?? ((work) => work);
  }

  get aborted(): boolean {
    return this.abort.signal.aborted;
  }

  stop(): void {
    this.abort.abort();
  }

  submit(i: number): Promise<Float32Array> | null {
    const chunk = this.plan.chunks[i];
    if (!chunk) return null;
    const style = this.plan.engine.voices.style(this.plan.voices, chunk.ids.length);
    // Only the first chunk can be refused for a full queue (503 before any audio); the rest
    // belong to a stream the client is already receiving.
    const p = this.plan.engine.synthesize({ ids: chunk.ids, style, speed: this.plan.speed }, { priority: this.plan.priority, signal: this.abort.signal, admitted: i > 0, account: this.plan.account });
    p.catch(() => {}); // observed when awaited; this keeps an abandoned prefetch from being "unhandled"
    return p;
  }

  wait(p: Promise<Float32Array>): Promise<Float32Array> {
    return this.timed(p);
  }

  /**
   * Each chunk loses Kokoro's own leading and trailing silence and gets the pause its place in the
   * text calls for (silence.ts).
   */
  encode(i: number, wave: Float32Array): Uint8Array {
    const pause = (this.plan.chunks[i]!.pauseBeforeMs * SAMPLE_RATE) / 1000 / this.plan.speed;
    return this.plan.encoder.encode(floatToInt16(shapeChunk(wave, pause, SAMPLE_RATE)));
  }
}

/** Synthesises the first chunk and the next one's start; throws (nothing sent) when it cannot. */
async function firstChunk(synthesis: Synthesis, clientSignal: AbortSignal | undefined): Promise<{ first: Float32Array; next: Promise<Float32Array> | null }> {
  const onClientGone = () => synthesis.stop();
  clientSignal?.addEventListener("abort", onClientGone, { once: true });
  try {
    const p0 = synthesis.submit(0)!;
    const next = synthesis.submit(1);
    const first = await synthesis.wait(p0);
    // A client that left while its first chunk ran has received nothing: it must not pay.
    if (clientSignal?.aborted) throw new ClientGoneError();
    return { first, next };
  } catch (err) {
    synthesis.stop();
    synthesis.plan.encoder.close();
    throw err;
  } finally {
    clientSignal?.removeEventListener("abort", onClientGone);
  }
}

/**
 * Starts a streamed speech response: the first chunk is synthesised before this resolves. The
 * source then writes the audio; `characters` (the input's code points) is what a completed
 * stream is charged.
 */
export async function startSpeechStream(plan: SpeechPlan, clientSignal: AbortSignal | undefined, characters: number, log: Log, requestId: string): Promise<SpeechSource> {
  const synthesis = new Synthesis(plan);
  const { first, next } = await firstChunk(synthesis, clientSignal);
  return new SpeechSource(synthesis, first, next, characters, (error) =>
    log.error("speech synthesis failed mid-stream", { request_id: requestId, error: String((error as Error)?.message ?? error).slice(0, 300) }));
}

export class SpeechSource implements MeteredSource {
  /** Audio already sent ends as a complete file even when its charge cannot be written (unbilled). */
  readonly completesUncharged = true;
  /** Characters whose audio was written (each counted with the write that completes its chunk). */
  private written = 0;

  constructor(
    private readonly synthesis: Synthesis,
    private readonly first: Float32Array,
    private next: Promise<Float32Array> | null,
    private readonly characters: number,
    private readonly onFailed: (error: unknown) => void,
  ) {}

  /** The client went away or stopped reading: synthesis stops (what it took is billed). */
  cancel(): void {
    this.synthesis.stop();
  }

  async run(out: MeteredOut): Promise<StreamEnding> {
    const { plan } = this.synthesis;
    // Characters whose audio is encoded but still held by the encoder: their chunk ends with the
    // next bytes written.
    let encodedChars = 0;
    const send = (bytes: Uint8Array) => {
      if (out.closed || bytes.byteLength === 0) return;
      out.write(bytes, encodedChars);
      this.written += encodedChars;
      encodedChars = 0;
    };
    const sendChunk = (i: number, wave: Float32Array) => {
      const bytes = this.synthesis.encode(i, wave);
      encodedChars += plan.chunks[i]!.chars;
      send(bytes);
    };
    try {
      send(plan.encoder.start());
      sendChunk(0, this.first);
      await turn();
      for (let i = 1; i < plan.chunks.length && !out.closed && !this.synthesis.aborted; i++) {
        // Backpressure: the next chunk is awaited (and the one after submitted) only once the
        // client has taken most of the audio queued for it.
        const room = out.ready();
        if (room) await room;
        if (out.closed) break;
        const wave = await this.synthesis.wait(this.next!);
        this.next = this.synthesis.submit(i + 1);
        sendChunk(i, wave);
        // When synthesis outpaces encoding, every wait above is already resolved; without a real
        // turn of the event loop the socket would only be written once the whole text is encoded.
        await turn();
      }
      if (out.closed || this.synthesis.aborted) return { kind: "failed", error: new ClientGoneError() };
      // The encoder's last bytes go out once the charge is durable: a client that has the whole
      // file was charged.
      return { kind: "completed", usage: { characters: this.characters }, closing: plan.encoder.finish() };
    } catch (error) {
      return { kind: "failed", error };
    } finally {
      this.synthesis.stop();
      plan.encoder.close();
    }
  }

  async deliveredUsage(untaken: number): Promise<Consumption | null> {
    const delivered = this.written - untaken;
    return delivered > 0 ? { characters: Math.min(delivered, this.characters) } : null;
  }

  failure(error: unknown): DomainError {
    if (!(error instanceof ClientGoneError)) this.onFailed(error);
    return new DomainError("internal", "speech_failed", `speech synthesis failed mid-stream: ${String((error as Error)?.message ?? error).slice(0, 300)}`);
  }

  /** A failed synthesis cuts the transfer off: the client sees an incomplete body, not a short file. */
  failedBytes(): null {
    return null;
  }
}

/**
 * A format sent whole (FLAC): every chunk is synthesised before the response starts, so a client
 * that leaves, or a failed chunk, is an error status with nothing billed. Resolves with the file.
 */
export async function synthesizeWhole(plan: SpeechPlan, clientSignal: AbortSignal | undefined): Promise<Uint8Array> {
  const synthesis = new Synthesis(plan);
  const start = await firstChunk(synthesis, clientSignal);
  let next = start.next;
  try {
    const parts = [plan.encoder.start(), synthesis.encode(0, start.first)];
    for (let i = 1; i < plan.chunks.length; i++) {
      const wave = await synthesis.wait(next!);
      next = synthesis.submit(i + 1);
      if (clientSignal?.aborted) throw new ClientGoneError();
      parts.push(synthesis.encode(i, wave));
    }
    parts.push(plan.encoder.finish());
    if (clientSignal?.aborted) throw new ClientGoneError();
    return concatBytes(parts);
  } finally {
    synthesis.stop();
    plan.encoder.close();
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
