/**
 * How a protocol route (chat completions, Messages, Responses) answers with the shared chat
 * pipeline: a plain call returns the translated body with an x-request-cost header; a streamed
 * call is a producer stream (SSE, heartbeats, backpressure, a client that stops reading cut off
 * after the route's idle timeout) fed by the chat relay, whose money a metered stream decides
 * (metering/metered-stream.ts). Routes supply only the translation; nothing here holds,
 * charges or releases.
 */
import { completeChat, openChatStream, type ChatPipelineDeps } from "../chat/pipeline";
import type { ChatCall, ChatResult } from "../chat/call";
import { ChatRelay, type ChatRelayDeps, type StreamFraming } from "../chat/relay";
import type { Drain } from "../limits/drain";
import type { StoredResponseRecord } from "../billing/ledger-store";
import { formatUsd } from "../billing/money";
import { runMeteredStream } from "../metering/metered-stream";
import { ClientGone } from "../upstream/dispatch";
import { SSE_HEADERS } from "../protocols/sse";
import { clientGone } from "../errors";
import { producerStream } from "../metering/producer-stream";

export type { StreamFraming } from "../chat/relay";

export const STREAM_HEARTBEAT_MS = 15_000;

type Json = Record<string, unknown>;
type Headers = Record<string, string | number>;

/** What answering with the chat pipeline uses: the pipeline, the relay, and the server's stop (which cuts streams). */
export type ChatAnswerDeps = ChatPipelineDeps & ChatRelayDeps & { drain: Drain };

/**
 * A non-streamed call: the protocol's body, with the exact charge in x-request-cost. `store` may
 * name a Responses turn to write with the charge.
 */
export async function completeForRoute<T>(
  s: ChatPipelineDeps,
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
  s: ChatAnswerDeps,
  call: ChatCall,
  ctx: { request: Request; server: { timeout(req: Request, seconds: number): void } | null; set: { headers: Headers } },
  framing: StreamFraming,
): Promise<Response> {
  const { metered, stream } = await openChatStream(s, call);
  const relay = new ChatRelay(s, call, metered, stream, framing);
  // Long quiet streams must outlive Bun's idle timeout; heartbeats keep proxies happy too.
  ctx.server?.timeout(ctx.request, 0);
  // Cut when the server stops and its grace period runs out: the upstream is cancelled, and the
  // relay ends the stream with its protocol's error event, unbilled.
  const unregister = s.drain.onCut(() => relay.cutForStop());
  let taken = () => 0;
  const body = producerStream({
    heartbeatMs: STREAM_HEARTBEAT_MS,
    // A client that stops reading gets as long as the upstream would, then is cut off.
    stallTimeoutMs: relay.idleTimeoutMs,
    onCancel: (reason) => {
      if (reason === "stalled") s.log.warn("stream cut off: the client stopped reading", { request_id: call.requestId, idle_ms: relay.idleTimeoutMs, bytes_sent: taken() });
      relay.cancel();
    },
    produce: async (w) => {
      taken = () => w.taken;
      try {
        await runMeteredStream(metered, w, relay, s.log);
      } finally {
        unregister();
      }
    },
  });
  return new Response(body, { headers: { ...SSE_HEADERS, ...(ctx.set.headers as Record<string, string>) } });
}
