/**
 * How a protocol route (chat completions, Messages, Responses) drives the shared chat pipeline:
 * a plain call returns the translated body with an x-request-cost header; a streamed call
 * relays chat chunks through the protocol's framing as SSE, with heartbeats, backpressure (the
 * upstream is read only as fast as the client takes bytes), the client's disconnect — or a client
 * that stops reading for the route's idle timeout — cancelling (and billing) the stream, and a
 * failure framed as the protocol's error event. Routes supply only the translation.
 *
 * A stream's hold has one owner (the ChatStream) and one release: the relay's finally. Every
 * billing decision is taken inside the relay, in order, after the iteration ended — so no path
 * (upstream failure, client gone, failed charge, a bug) can leave the hold behind or reject
 * unobserved.
 */
import type { Services } from "../services";
import { chatResult, completeChat, openChatStream } from "../chat/pipeline";
import type { ChatCall, ChatResult } from "../chat/call";
import { StreamFailure, type ChatStream } from "../chat/stream";
import type { StoredResponseRecord } from "../billing/ledger-store";
import { formatUsd } from "../billing/money";
import { ClientGone } from "../upstream/dispatch";
import { SSE_HEADERS } from "../protocols/sse";
import { SseFrames } from "../protocols/sse-frames";
import { DomainError, chargeNotRecorded, clientGone, midStreamFailure } from "../errors";
import { requestMetrics } from "../metrics/request-metrics";
import { producerStream, type StreamWriter } from "./streaming";
import { streamCutByStop } from "../limits/drain";
import { collectFull, GcPacer } from "../runtime/memory";

export const STREAM_HEARTBEAT_MS = 15_000;

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

type Json = Record<string, unknown>;
type Headers = Record<string, string | number>;

/** How a stream ends once its charge is known. */
export interface StreamEnding {
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
  finish(result: ChatResult): StreamEnding;
}

/**
 * A non-streamed call: the protocol's body, with the exact charge in x-request-cost. `store` may
 * name a Responses turn to write with the charge.
 */
export async function completeForRoute<T>(
  s: Services,
  call: ChatCall,
  set: { headers: Headers },
  translate: (chat: Json, result: ChatResult) => T,
  store?: (value: T) => StoredResponseRecord | undefined,
): Promise<T> {
  try {
    const { value, result } = await completeChat(s, call, (chat, result) => {
      const value = translate(chat, result);
      return { value, storedResponse: store?.(value) };
    });
    set.headers["x-request-cost"] = formatUsd(result.charged);
    return value;
  } catch (err) {
    if (err instanceof ClientGone) throw clientGone();
    throw err;
  }
}

/** A streamed call: resolves once an upstream accepted it (errors before that throw as usual). */
export async function streamForRoute(
  s: Services,
  call: ChatCall,
  ctx: { request: Request; server: { timeout(req: Request, seconds: number): void } | null; set: { headers: Headers } },
  framing: StreamFraming,
): Promise<Response> {
  const stream = await openChatStream(s, call);
  // Long quiet streams must outlive Bun's idle timeout; heartbeats keep proxies happy too.
  ctx.server?.timeout(ctx.request, 0);
  let writer: StreamWriter | null = null;
  // Cut when the server stops and its grace period runs out: the upstream is cancelled, and the
  // relay ends the stream with its protocol's error event, unbilled.
  const stop = { cut: false };
  const unregister = s.drain.onCut(() => {
    stop.cut = true;
    stream.cancel();
  });
  const body = producerStream({
    heartbeatMs: STREAM_HEARTBEAT_MS,
    // A client that stops reading gets as long as the upstream would, then is cut off.
    stallTimeoutMs: stream.idleTimeoutMs,
    onCancel: (reason) => {
      if (reason === "stalled") s.log.warn("stream cut off: the client stopped reading", { request_id: call.requestId, idle_ms: stream.idleTimeoutMs, bytes_sent: writer?.taken ?? 0 });
      stream.cancel();
    },
    produce: async (w) => {
      writer = w;
      try {
        await relay(s, call, stream, framing, w, stop);
      } catch (err) {
        s.log.error("stream relay failed", { request_id: call.requestId, error: String((err as Error)?.stack ?? err) });
      } finally {
        unregister();
        // The one release of a stream's hold: a no-op when it was charged.
        await stream.hold.release();
      }
    },
  });
  return new Response(body, { headers: { ...SSE_HEADERS, ...(ctx.set.headers as Record<string, string>) } });
}

async function relay(s: Services, call: ChatCall, stream: ChatStream, framing: StreamFraming, w: StreamWriter, stop: { cut: boolean }): Promise<void> {
  // The frames of one step go out as one write: one encode, one enqueue, one socket write.
  const untaken = new UntakenText();
  const fullGc = fullGcPacer(s.config.streamGcMib);
  let written = 0;
  const frames = new SseFrames();
  const send = (text: string | SseFrames, chars = 0) => {
    if (text === "") return;
    // Buffer.from encodes UTF-8 in about half the time TextEncoder takes here.
    const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text.take();
    if (bytes.byteLength === 0) return;
    // SseFrames' bytes are a buffer of their own: freed once the client's connection took them.
    w.write(bytes, typeof text !== "string");
    written += bytes.byteLength;
    relayGarbage.made(bytes.byteLength);
    fullGc?.made(bytes.byteLength);
    untaken.add(written, chars);
  };
  const tier = call.resolved.tier;
  if (framing.start) send(framing.start());
  let failure: unknown = null;
  try {
    for await (const batch of stream.batches()) {
      if (w.closed) {
        // Read from the upstream, never written: not delivered.
        untaken.add(Infinity, batch.chars);
        break;
      }
      for (let i = 0; i < batch.chunks.length; i++) framing.push(batch.chunks[i]!, frames);
      send(frames, batch.chars);
      // Nothing of the read is kept while the client takes it: only its bytes, queued in the
      // writer (docs/architecture.md, "Memory per stream").
      batch.chunks.length = 0;
      // Backpressure: the upstream is read again only once the client took most of this.
      const room = w.ready();
      if (room) await room;
      untaken.settleUpTo(w.taken);
    }
  } catch (err) {
    failure = err;
  }

  if (w.closed) {
    // The client went away (or was cut off): input plus the output its connection took — not
    // what was still queued for it — or nothing when none was.
    const usage = await stream.deliveredUsage(untaken.after(w.taken));
    if (usage) {
      await stream.hold.settle({ ...usage, serviceTier: tier }).catch((err) => {
        s.log.error("charge of a disconnected stream failed; not billed", { request_id: call.requestId, error: String((err as Error)?.message ?? err) });
      });
    }
    return;
  }

  if (failure !== null && stop.cut) {
    send(framing.failed(streamCutByStop(await stream.hold.release())));
    return;
  }

  if (failure !== null) {
    if (!(failure instanceof StreamFailure)) {
      s.log.error("stream relay failed", { request_id: call.requestId, error: String((failure as Error)?.stack ?? failure) });
    }
    requestMetrics(s).upstreamErrors.inc({ endpoint: call.endpoint, kind: "mid_stream" });
    send(framing.failed(midStreamFailure(await stream.hold.release())));
    return;
  }

  const usage = await stream.finalUsage();
  const ending = framing.finish(chatResult(stream.hold, usage, tier));
  try {
    // Durable before the last frame: a client that saw the end was charged.
    await stream.hold.settle({ ...usage, serviceTier: tier, storedResponse: ending.storedResponse });
  } catch (err) {
    s.log.error("stream settlement failed", { request_id: call.requestId, error: String((err as Error)?.message ?? err) });
    // settle() released the hold; "not billed" only if that release is durable.
    const told = err instanceof DomainError && err.kind === "unavailable" ? err : chargeNotRecorded(await stream.hold.release());
    send(framing.failed(told));
    return;
  }
  send(ending.frames);
}

/**
 * How much of the relayed text the client's connection has not taken: each write's text length
 * with the byte offset where the write ends, kept until the write is taken (so at most the
 * writer's high-water mark, plus one write).
 */
class UntakenText {
  private readonly pending: { end: number; chars: number }[] = [];
  private chars = 0;

  /** `chars` characters of text written up to byte `end` (Infinity: never written). */
  add(end: number, chars: number): void {
    if (chars === 0) return;
    this.pending.push({ end, chars });
    this.chars += chars;
  }

  /** Forgets the writes the connection took (up to byte `taken`). */
  settleUpTo(taken: number): void {
    while (this.pending.length > 0 && this.pending[0]!.end <= taken) this.chars -= this.pending.shift()!.chars;
  }

  /** Characters of text written after byte `taken`. */
  after(taken: number): number {
    this.settleUpTo(taken);
    return this.chars;
  }
}
