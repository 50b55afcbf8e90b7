/**
 * What the gateway tracks about each request while it runs: when it started, how long it waited
 * on upstreams or local engines (so gateway overhead = total − that; see metrics/engine-time.ts),
 * the caller's account and its concurrency slot.
 */
import type { Slot } from "../limits/limiter";
import { closeEngineClock, openEngineClock, type EngineClock } from "../metrics/engine-time";

export interface RequestContext extends EngineClock {
  requestId: string;
  /** performance.now() at arrival. */
  startedAt: number;
  accountId: string | null;
  slot: Slot | null;
  /** The response body is a stream; the request ends when the stream does. */
  streamed: boolean;
  finished: boolean;
}

const idBytes = new Uint8Array(10);

/**
 * A new request id: "req_" + the time in ms (base 36, fixed width, so ids sort by arrival) + 80
 * random bits. Sorting by time keeps the ledger's request-id indexes appending at their right
 * edge instead of touching a random page per insert; the random part keeps ids unguessable.
 */
export function newRequestId(now = Date.now()): string {
  crypto.getRandomValues(idBytes);
  return `req_${now.toString(36).padStart(9, "0")}${Buffer.from(idBytes.buffer, idBytes.byteOffset, idBytes.byteLength).toString("base64url")}`;
}

const byRequest = new WeakMap<Request, RequestContext>();

export function beginRequest(request: Request, requestId: string): RequestContext {
  const ctx: RequestContext = { requestId, startedAt: performance.now(), engineMs: 0, accountId: null, slot: null, streamed: false, finished: false };
  byRequest.set(request, ctx);
  openEngineClock(requestId, ctx);
  return ctx;
}

export function contextOf(request: Request): RequestContext | undefined {
  return byRequest.get(request);
}

/** Marks the request finished: its slot is released and it no longer accepts engine time. */
export function endRequest(ctx: RequestContext): boolean {
  if (ctx.finished) return false;
  ctx.finished = true;
  ctx.slot?.release();
  closeEngineClock(ctx.requestId);
  return true;
}

/**
 * Gives the request's concurrency slot back as soon as its work is done and its response is
 * complete in memory (plain bodies, errors) — before it is sent, so a client that fires its next
 * request the moment it reads this one's reply is never refused for a slot still being freed.
 */
export function releaseSlotOf(request: Request): void {
  contextOf(request)?.slot?.release();
}
