/**
 * How a protocol route (chat completions, Messages, Responses) drives the shared chat pipeline:
 * a plain call returns the translated body with an x-request-cost header; a streamed call
 * relays chat chunks through the protocol's framing as SSE, with heartbeats, the client's
 * disconnect cancelling (and billing) the stream, and a failure framed as the protocol's error
 * event. Routes supply only the translation.
 *
 * A stream's hold has one owner (the ChatStream) and one release: the relay's finally. Every
 * billing decision is taken inside the relay, in order, after the iteration ended — so no path
 * (upstream failure, client gone, failed charge, a bug) can leave the hold behind or reject
 * unobserved.
 */
import type { Services } from "../services";
import { chatResult, completeChat, openChatStream, type ChatCall, type ChatResult } from "../chat/pipeline";
import { StreamFailure, type ChatStream } from "../chat/stream";
import type { StoredResponseRecord } from "../billing/ledger-store";
import { formatUsd } from "../billing/money";
import { ClientGone } from "../upstream/dispatch";
import { SSE_HEADERS } from "../protocols/sse";
import { DomainError, chargeNotRecorded, clientGone, midStreamFailure } from "../errors";
import { requestMetrics } from "../metrics/request-metrics";
import { producerStream, type StreamWriter } from "./streaming";

export const STREAM_HEARTBEAT_MS = 15_000;

type Json = Record<string, unknown>;
type Headers = Record<string, string | number>;

/** How a stream ends once its charge is known. */
export interface StreamEnding {
  frames: Uint8Array[];
  /** A Responses turn to store in the charge's own transaction. */
  storedResponse?: StoredResponseRecord;
}

export interface StreamFraming {
  /** Frames sent before the first chunk (e.g. message_start). */
  start?(): Uint8Array[];
  /** Frames for one rewritten chat chunk. */
  push(chunk: Json): Uint8Array[];
  /** Frames when the stream failed after it started (the error says whether it was billed). */
  failed(error: DomainError): Uint8Array[];
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
  const body = producerStream({
    heartbeatMs: STREAM_HEARTBEAT_MS,
    onCancel: () => stream.cancel(),
    produce: async (w) => {
      try {
        await relay(s, call, stream, framing, w);
      } catch (err) {
        s.log.error("stream relay failed", { request_id: call.requestId, error: String((err as Error)?.stack ?? err) });
      } finally {
        // The one release of a stream's hold: a no-op when it was charged.
        await stream.hold.release();
      }
    },
  });
  return new Response(body, { headers: { ...SSE_HEADERS, ...(ctx.set.headers as Record<string, string>) } });
}

async function relay(s: Services, call: ChatCall, stream: ChatStream, framing: StreamFraming, w: StreamWriter): Promise<void> {
  // Frames produced together go out as one write: one enqueue, one socket write.
  const send = (frames: Uint8Array[]) => {
    if (frames.length === 1) w.write(frames[0]!);
    else if (frames.length > 1) w.write(Buffer.concat(frames));
  };
  const tier = call.resolved.tier;
  if (framing.start) send(framing.start());
  let failure: unknown = null;
  try {
    for await (const batch of stream.batches()) {
      if (w.closed) break;
      const frames: Uint8Array[] = [];
      for (const chunk of batch) for (const f of framing.push(chunk)) frames.push(f);
      send(frames);
    }
  } catch (err) {
    failure = err;
  }

  if (w.closed || stream.clientGone) {
    // The client went away: input plus the output it was sent, or nothing when none was.
    const usage = stream.deliveredUsage();
    if (usage) {
      await stream.hold.settle({ ...usage, serviceTier: tier }).catch((err) => {
        s.log.error("charge of a disconnected stream failed; not billed", { request_id: call.requestId, error: String((err as Error)?.message ?? err) });
      });
    }
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

  const usage = stream.finalUsage();
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
