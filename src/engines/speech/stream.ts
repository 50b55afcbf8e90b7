/**
 * One speech request as a byte stream: chunks are synthesised in order (the next one queued while
 * the current one is encoded), each chunk's audio is encoded and sent as soon as it is ready, so
 * the first bytes leave after the first sentence. The first chunk is synthesised before the
 * stream is returned, so a request that cannot start (queue full, engine failure, client gone)
 * still gets a proper error status. Billing is told at the end how many input characters had
 * their audio delivered, and whether the stream completed, failed, or was cancelled.
 */
import type { AudioEncoder } from "../../audio/encoder";
import { concatBytes, floatToInt16 } from "../../audio/pcm";
import type { SpeechChunk } from "../../text/frontend";
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
  /** A client that takes none of its queued audio for this long is cut off (default 120 s). */
  stallTimeoutMs?: number;
}

/**
 * Encoded audio queued for a client above which synthesis of the next chunk waits: a client that
 * stops reading stops the engine (one chunk is prefetched), instead of the whole text being
 * synthesised into memory.
 */
export const SPEECH_HIGH_WATER_BYTES = 32 * 1024;
const DEFAULT_STALL_TIMEOUT_MS = 120_000;

/** The client disconnected before any audio was sent. */
export class ClientGoneError extends Error {
  constructor() {
    super("client disconnected before any audio");
    this.name = "AbortError";
  }
}

/** Ends a response whose synthesis failed after audio was sent. */
export class SpeechAbortedError extends Error {
  constructor() {
    super("speech synthesis failed mid-stream; the response is incomplete and was not billed");
    this.name = "SpeechAborted";
    this.stack = `${this.name}: ${this.message}`;
  }
}

export type SpeechOutcome =
  | { kind: "completed"; deliveredChars: number }
  | { kind: "cancelled"; deliveredChars: number }
  | { kind: "failed"; error: unknown };

export async function openSpeechStream(
  plan: SpeechPlan,
  clientSignal: AbortSignal | undefined,
  finish: (outcome: SpeechOutcome) => Promise<void>,
): Promise<ReadableStream<Uint8Array>> {
  const abort = new AbortController();
  const onClientGone = () => abort.abort();
  clientSignal?.addEventListener("abort", onClientGone, { once: true });

  const submit = (i: number): Promise<Float32Array> | null => {
    const chunk = plan.chunks[i];
    if (!chunk) return null;
    const style = plan.engine.voices.style(plan.voices, chunk.ids.length);
    // Only the first chunk can be refused for a full queue (503 before any audio); the rest
    // belong to a stream the client is already receiving.
    const p = plan.engine.synthesize({ ids: chunk.ids, style, speed: plan.speed }, { priority: plan.priority, signal: abort.signal, admitted: i > 0, account: plan.account });
    p.catch(() => {}); // observed below; this keeps an abandoned prefetch from being "unhandled"
    return p;
  };

  const timed = plan.timed ?? (<T>(work: Promise<T>) => work);
  // Each chunk loses Kokoro's own leading and trailing silence and gets the pause its place in
  // the text calls for (silence.ts).
  const encodeChunk = (i: number, wave: Float32Array): Uint8Array => {
    const pause = (plan.chunks[i]!.pauseBeforeMs * SAMPLE_RATE) / 1000 / plan.speed;
    return plan.encoder.encode(floatToInt16(shapeChunk(wave, pause, SAMPLE_RATE)));
  };
  let first: Float32Array;
  let next: Promise<Float32Array> | null;
  try {
    const p0 = submit(0)!;
    next = submit(1);
    first = await timed(p0);
    // A client that left while its first chunk ran has received nothing: it must not pay.
    if (clientSignal?.aborted) throw new ClientGoneError();
  } catch (err) {
    abort.abort();
    clientSignal?.removeEventListener("abort", onClientGone);
    plan.encoder.close();
    throw err;
  }

  if (plan.encoder.wholeFile) return wholeFile(plan, first, next, submit, encodeChunk, timed, clientSignal, finish, () => {
    abort.abort();
    clientSignal?.removeEventListener("abort", onClientGone);
  });

  /** Bytes enqueued so far, and where each chunk's audio ends in them (with its characters). */
  let enqueued = 0;
  const chunkEnds: { end: number; chars: number }[] = [];
  // Characters whose audio is encoded but still held by the encoder: their chunk ends with the
  // next bytes sent.
  let encodedChars = 0;
  /** Bytes the client's connection took, as of the last pull (never more than it did take). */
  let taken = 0;
  /** Characters whose audio the client took in full: what a client that leaves pays for. */
  const deliveredChars = () => {
    let chars = 0;
    for (const c of chunkEnds) if (c.end <= taken) chars += c.chars;
    return chars;
  };
  /** Wakes the synthesis loop when the client has taken enough of the queued audio. */
  let onRoom: (() => void) | null = null;
  let cancelled = false;
  let settled = false;
  const end = async (outcome: SpeechOutcome) => {
    if (settled) return;
    settled = true;
    clientSignal?.removeEventListener("abort", onClientGone);
    plan.encoder.close();
    await finish(outcome);
  };

  const stallMs = plan.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  /** Resolves true once there is room in the client's queue, false if it stalled for stallMs. */
  const room = (controller: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> => {
    if (cancelled || (controller.desiredSize ?? 1) > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        onRoom = null;
        resolve(false);
      }, stallMs);
      onRoom = () => {
        clearTimeout(timer);
        onRoom = null;
        resolve(true);
      };
    });
  };

  const run = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
    const send = (bytes: Uint8Array) => {
      if (cancelled || bytes.length === 0) return;
      enqueued += bytes.length;
      controller.enqueue(bytes);
      if (encodedChars > 0) {
        chunkEnds.push({ end: enqueued, chars: encodedChars });
        encodedChars = 0;
      }
    };
    const sendChunk = (i: number, wave: Float32Array) => {
      const bytes = encodeChunk(i, wave);
      encodedChars += plan.chunks[i]!.chars;
      send(bytes);
    };
    const closeQuietly = () => {
      try {
        if (!cancelled) controller.close();
      } catch {
        // already closed or errored
      }
    };
    try {
      send(plan.encoder.start());
      sendChunk(0, first);
      await new Promise<void>((resolve) => setImmediate(resolve));
      let stalled = false;
      for (let i = 1; i < plan.chunks.length && !cancelled && !abort.signal.aborted; i++) {
        // Backpressure: the next chunk is awaited (and the one after submitted) only once the
        // client has taken most of the audio queued for it.
        if (!(await room(controller))) {
          stalled = true;
          break;
        }
        const wave = await timed(next!);
        next = submit(i + 1);
        sendChunk(i, wave);
        // When synthesis outpaces encoding, every wait above is already resolved; without a real
        // turn of the event loop the socket would only be written once the whole text is encoded.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (stalled) {
        // Cut off like a client that left: it pays for the audio it took.
        abort.abort();
        await end({ kind: "cancelled", deliveredChars: deliveredChars() });
        cancelled = true;
        return controller.error(new SpeechAbortedError());
      }
      if (cancelled || abort.signal.aborted) {
        await end({ kind: "cancelled", deliveredChars: deliveredChars() });
        return closeQuietly();
      }
      send(plan.encoder.finish());
      // The charge is durable before the response completes.
      await end({ kind: "completed", deliveredChars: chunkEnds.reduce((n, c) => n + c.chars, 0) });
      closeQuietly();
    } catch (err) {
      abort.abort();
      if (cancelled || clientSignal?.aborted) {
        await end({ kind: "cancelled", deliveredChars: deliveredChars() });
        return closeQuietly();
      }
      await end({ kind: "failed", error: err });
      // Erroring the body aborts the chunked response: the client sees a failed transfer, not a
      // short file. The cause was logged by `finish`; this error carries no internals.
      controller.error(new SpeechAbortedError());
    }
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // Not awaited: bytes flow to the client while later chunks are still being synthesised.
        run(controller).catch(() => {});
      },
      // Called whenever the queue is below its high-water mark after the client took bytes.
      pull(controller) {
        taken = Math.max(taken, enqueued - (SPEECH_HIGH_WATER_BYTES - (controller.desiredSize ?? 0)));
        onRoom?.();
      },
      cancel() {
        cancelled = true;
        abort.abort();
        onRoom?.();
      },
    },
    { highWaterMark: SPEECH_HIGH_WATER_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  );
}

/**
 * A format sent whole (FLAC): every chunk is synthesised before the response starts, so until
 * then a client that leaves, or a failed chunk, is an error status with nothing billed, exactly
 * as before the first chunk of a streamed format. The charge is durable before the file is sent.
 */
async function wholeFile(
  plan: SpeechPlan,
  first: Float32Array,
  next: Promise<Float32Array> | null,
  submit: (i: number) => Promise<Float32Array> | null,
  encodeChunk: (i: number, wave: Float32Array) => Uint8Array,
  timed: <T>(work: Promise<T>) => Promise<T>,
  clientSignal: AbortSignal | undefined,
  finish: (outcome: SpeechOutcome) => Promise<void>,
  cleanUp: () => void,
): Promise<ReadableStream<Uint8Array>> {
  let file: Uint8Array;
  try {
    const parts = [plan.encoder.start(), encodeChunk(0, first)];
    for (let i = 1; i < plan.chunks.length; i++) {
      const wave = await timed(next!);
      next = submit(i + 1);
      if (clientSignal?.aborted) throw new ClientGoneError();
      parts.push(encodeChunk(i, wave));
    }
    parts.push(plan.encoder.finish());
    if (clientSignal?.aborted) throw new ClientGoneError();
    file = concatBytes(parts);
    await finish({ kind: "completed", deliveredChars: plan.chunks.reduce((n, c) => n + c.chars, 0) });
  } finally {
    cleanUp();
    plan.encoder.close();
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(file);
      controller.close();
    },
  });
}
