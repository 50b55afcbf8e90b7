/**
 * A relayed chat stream as a metered source (metering/metered-stream.ts): the upstream's chunks,
 * rewritten by the ChatStream, framed by the protocol (chat completions, Messages, Responses) as
 * SSE and written one upstream read at a time, with backpressure — the upstream is read again only
 * once the client took most of what was written. Each write carries the characters of text it
 * delivers, so a client that leaves pays for the text its connection took. The money is decided
 * by runMeteredStream; this file only relays, frames and measures.
 */
import type { Config } from "../config";
import type { Log } from "../log";
import type { MetricsRegistry } from "../metrics/registry";
import type { Consumption, StoredResponseRecord } from "../billing/ledger-store";
import type { MeteredCall } from "../metering/metered-call";
import type { MeteredOut, MeteredSource, StreamEnding } from "../metering/metered-stream";
import { DomainError, midStreamFailure } from "../errors";
import { streamCutByStop } from "../limits/drain";
import { requestMetrics } from "../metrics/request-metrics";
import { SseFrames } from "../protocols/sse-frames";
import { collectFull, GcPacer } from "../runtime/memory";
import type { ChatCall, ChatResult } from "./call";
import { StreamFailure, type ChatStream } from "./stream";
import { chatResult } from "./pipeline";

type Json = Record<string, unknown>;

/**
 * Bytes relayed (all streams together) between collections of the serving thread's young garbage:
 * each relayed byte leaves a few bytes of strings and buffers that die within its read (see
 * runtime/memory.ts, GcPacer). 256 KiB saved no more memory in the stream-memory bench, and cost
 * more CPU per request in the hot-path bench's streamed mode.
 */
export const RELAY_EDEN_BYTES = 1024 * 1024;
const relayGarbage = new GcPacer(RELAY_EDEN_BYTES);
/**
 * With SWITCHYARD_STREAM_GC_MIB set, a full collection every so many MiB relayed: what the young
 * collections promoted (text and bytes that waited for a client) is freed too. It lowers the peak
 * memory of many long streams but stops the event loop 10–30 ms each time, so it is off unless
 * asked for (docs/architecture.md, "Memory per stream"). JavaScriptCore's own full collection,
 * not Bun.gc(true), which also sweeps and trims the allocators: about a third of the pause.
 */
let relayFullGc: { mib: number; pacer: GcPacer | null } = { mib: 0, pacer: null };
function fullGcPacer(mib: number): GcPacer | null {
  if (relayFullGc.mib !== mib) relayFullGc = { mib, pacer: mib > 0 ? new GcPacer(mib * 1024 * 1024, collectFull) : null };
  return relayFullGc.pacer;
}

/** What a relay uses besides its stream: the full-collection setting, the log and the error counter. */
export interface ChatRelayDeps {
  config: Pick<Config, "streamGcMib">;
  log: Log;
  metrics: MetricsRegistry;
}

/** How a stream ends once its charge is known. */
export interface StreamEndFrames {
  /** SSE text. */
  frames: string;
  /** A Responses turn to store in the charge's own transaction. */
  storedResponse?: StoredResponseRecord;
}

/**
 * The protocol's SSE frames for each step of a stream. The frames of one upstream read's chunks
 * are gathered in one SseFrames and encoded once, as one write; the rarer steps are text.
 */
export interface StreamFraming {
  /** Frames sent before the first chunk (e.g. message_start). */
  start?(): string;
  /** Adds the frames for one rewritten chat chunk. */
  push(chunk: Json, frames: SseFrames): void;
  /** Frames when the stream failed after it started (the error says whether it was billed). */
  failed(error: DomainError): string;
  /** Final frames of a completed stream, built before its charge is written and sent after. */
  finish(result: ChatResult): StreamEndFrames;
}

/** Buffer.from encodes UTF-8 in about half the time TextEncoder takes here. */
const encode = (text: string): Uint8Array => Buffer.from(text, "utf8");

export class ChatRelay implements MeteredSource {
  /** The server is stopping and its grace period ran out: the stream ends with the protocol's error, unbilled. */
  private cutByStop = false;

  constructor(
    private readonly s: ChatRelayDeps,
    private readonly call: ChatCall,
    private readonly metered: MeteredCall,
    private readonly stream: ChatStream,
    private readonly framing: StreamFraming,
  ) {}

  /** How long a relay waits for a client that stopped reading: the route's idle timeout. */
  get idleTimeoutMs(): number {
    return this.stream.idleTimeoutMs;
  }

  /** The client went away or stopped reading: stop the upstream (what was delivered is billed). */
  cancel(): void {
    this.stream.cancel();
  }

  /** The server stops: the upstream is cancelled and the stream ends with the protocol's error event, unbilled. */
  cutForStop(): void {
    this.cutByStop = true;
    this.stream.cancel();
  }

  async run(out: MeteredOut): Promise<StreamEnding> {
    const fullGc = fullGcPacer(this.s.config.streamGcMib);
    const frames = new SseFrames();
    // The frames of one step go out as one write: one encode, one enqueue, one socket write.
    const send = (bytes: Uint8Array, chars: number, owned: boolean) => {
      if (bytes.byteLength === 0) return;
      // SseFrames' bytes are a buffer of their own: freed once the client's connection took them.
      out.write(bytes, chars, owned);
      relayGarbage.made(bytes.byteLength);
      fullGc?.made(bytes.byteLength);
    };
    if (this.framing.start) send(encode(this.framing.start()), 0, false);
    try {
      for await (const batch of this.stream.batches()) {
        if (out.closed) {
          // Read from the upstream, never written: not delivered.
          out.dropped(batch.chars);
          break;
        }
        for (let i = 0; i < batch.chunks.length; i++) this.framing.push(batch.chunks[i]!, frames);
        send(frames.take(), batch.chars, true);
        // Nothing of the read is kept while the client takes it: only its bytes, queued in the
        // writer (docs/architecture.md, "Memory per stream").
        batch.chunks.length = 0;
        // Backpressure: the upstream is read again only once the client took most of this.
        const room = out.ready();
        if (room) await room;
      }
    } catch (error) {
      return { kind: "failed", error };
    }
    if (out.closed) return { kind: "failed", error: new StreamFailure("the client left") };
    const tier = this.call.resolved.tier;
    const usage = await this.stream.finalUsage();
    const ending = this.framing.finish(chatResult(this.metered, usage, tier));
    return { kind: "completed", usage, storedResponse: ending.storedResponse, closing: encode(ending.frames) };
  }

  deliveredUsage(untaken: number): Promise<Consumption | null> {
    return this.stream.deliveredUsage(untaken);
  }

  failure(error: unknown, voided: boolean): DomainError {
    if (this.cutByStop) return streamCutByStop(voided);
    if (!(error instanceof StreamFailure)) {
      this.s.log.error("stream relay failed", { request_id: this.call.requestId, error: String((error as Error)?.stack ?? error) });
    }
    requestMetrics(this.s.metrics).upstreamErrors.inc({ endpoint: this.call.endpoint, kind: "mid_stream" });
    return midStreamFailure(voided);
  }

  failedBytes(error: DomainError): Uint8Array {
    return encode(this.framing.failed(error));
  }
}
