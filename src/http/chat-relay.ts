/**
 * How a protocol route (chat completions, Messages, Responses) drives the shared chat pipeline:
 * a plain call returns the translated body with an x-request-cost header; a streamed call
 * relays chat chunks through the protocol's framing as SSE, with heartbeats, the client's
 * disconnect cancelling (and billing) the stream, and an upstream failure framed as the
 * protocol's error event. Routes supply only the translation.
 */
import type { Services } from "../services";
import { completeChat, openChatStream, type ChatCall, type ChatResult } from "../chat/pipeline";
import { StreamFailure } from "../chat/stream";
import { formatUsd } from "../billing/money";
import { ClientGone } from "../upstream/dispatch";
import { SSE_HEADERS } from "../protocols/sse";
import { clientGone } from "../errors";
import { producerStream } from "./streaming";

export const STREAM_HEARTBEAT_MS = 15_000;

type Json = Record<string, unknown>;
type Headers = Record<string, string | number>;

/** What a failed-mid-stream client is told; the request is not billed. */
export const MID_STREAM_FAILURE = "The model backend failed mid-stream. This request was not billed.";

export interface StreamFraming {
  /** Frames sent before the first chunk (e.g. message_start). */
  start?(): Uint8Array[];
  /** Frames for one rewritten chat chunk. */
  push(chunk: Json): Uint8Array[];
  /** Frames when the upstream broke mid-stream. */
  failed(): Uint8Array[];
  /** Final frames once the stream settled (result is null when nothing was charged). */
  finish(result: ChatResult | null): Uint8Array[];
}

/** A non-streamed call: the protocol's body, with the exact charge in x-request-cost. */
export async function completeForRoute<T>(
  s: Services,
  call: ChatCall,
  set: { headers: Headers },
  translate: (chat: Json, result: ChatResult) => T,
): Promise<T> {
  try {
    const { body, result } = await completeChat(s, call);
    set.headers["x-request-cost"] = formatUsd(result.charged);
    return translate(body, result);
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
    onCancel: () => void stream.cancel(),
    produce: async (w) => {
      // Frames produced together go out as one write: one enqueue, one socket write.
      const send = (frames: Uint8Array[]) => {
        if (frames.length === 1) w.write(frames[0]!);
        else if (frames.length > 1) w.write(Buffer.concat(frames));
      };
      if (framing.start) send(framing.start());
      try {
        for await (const batch of stream.batches()) {
          if (w.closed) break;
          const frames: Uint8Array[] = [];
          for (const chunk of batch) for (const f of framing.push(chunk)) frames.push(f);
          send(frames);
        }
      } catch (err) {
        // An upstream failure released the hold already; anything else (a framing bug) must too.
        if (!(err instanceof StreamFailure)) {
          stream.abandon();
          s.log.error("stream relay failed", { request_id: call.requestId, error: String((err as Error)?.stack ?? err) });
        }
        if (!w.closed) send(framing.failed());
        return;
      }
      if (w.closed) return;
      let result: ChatResult | null;
      try {
        result = await stream.complete();
      } catch (err) {
        // The charge could not be made durable: nothing was billed, and the client is told.
        stream.abandon();
        s.log.error("stream settlement failed", { request_id: call.requestId, error: String((err as Error)?.stack ?? err) });
        send(framing.failed());
        return;
      }
      send(framing.finish(result));
    },
  });
  return new Response(body, { headers: { ...SSE_HEADERS, ...(ctx.set.headers as Record<string, string>) } });
}
