/**
 * What the gateway tracks about each request while it runs: when it started, how long it waited
 * on upstreams or local engines (so gateway overhead = total − that; see metrics/engine-time.ts),
 * the caller's account and its concurrency slot.
 */
import type { Slot } from "../limits/limiter";
import type { Caller } from "./auth";
import { closeEngineClock, openEngineClock, type EngineClock } from "../metrics/engine-time";

export interface RequestContext extends EngineClock {
  requestId: string;
  /** performance.now() at arrival. */
  startedAt: number;
  accountId: string | null;
  /** The account whose key was accepted, admitted or not: a refusal's (see limits/refusal-pacer.ts). */
  authenticatedAccount?: string;
  /** Set once the caller was authenticated and admitted (see auth.ts). */
  caller?: Caller;
  slot: Slot | null;
  /** The response body is a stream; the request ends when the stream does. */
  streamed: boolean;
  finished: boolean;
}

/** Random bytes for request ids, drawn 512 ids at a time (one getRandomValues call per 512). */
const ID_BYTES = 10;
const idPool = Buffer.alloc(ID_BYTES * 512);
let idOffset = idPool.length;
/** The "req_" + time part, reused while the clock reads the same millisecond. */
let prefixMs = -1;
let prefix = "";

/**
 * A new request id: "req_" + the time in ms (base 36, fixed width, so ids sort by arrival) + 80
 * random bits. Sorting by time keeps the ledger's request-id indexes appending at their right
 * edge instead of touching a random page per insert; the random part keeps ids unguessable.
 */
export function newRequestId(now = Date.now()): string {
  if (idOffset === idPool.length) {
    crypto.getRandomValues(idPool);
    idOffset = 0;
  }
  if (now !== prefixMs) {
    prefixMs = now;
    prefix = `req_${now.toString(36).padStart(9, "0")}`;
  }
  const id = prefix + idPool.toString("base64url", idOffset, idOffset + ID_BYTES);
  idOffset += ID_BYTES;
  return id;
}

/**
 * The request id the app's first hook assigned (as the x-request-id response header), as handlers
 * see it. Here, not in app.ts, so that the routes app.ts registers need nothing of it but its type.
 */
export function requestIdOf(set: { headers: Record<string, unknown> }): string {
  return set.headers["x-request-id"] as string;
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
