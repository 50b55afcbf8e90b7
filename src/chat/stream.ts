/**
 * Relays an upstream chat-completions SSE stream as rewritten chunk objects. The relay
 * (chat/relay.ts, run by metering/metered-stream.ts) decides, once the iteration is over, what to bill:
 *   completed          → the upstream's usage (or our count when it sent none), clamped to the hold;
 *   at the output cap  → the upstream is stopped, the stream ends as `length`, billed as delivered;
 *   at its deadline    → the same (SWITCHYARD_STREAM_MAX_SECONDS: no stream runs longer);
 *   upstream failed    → nothing (the relay's finally releases the hold); this includes an SSE
 *                        line or event over its bound, and an upstream that sends only comments
 *                        (no data event) for the route's idle timeout;
 *   client went away   → input plus the output delivered so far, or nothing if none was.
 */
import type { Config } from "../config";
import type { Log } from "../log";
import type { MetricsRegistry } from "../metrics/registry";
import type { Consumption } from "../billing/ledger-store";
import { SseParser } from "../protocols/sse";
import { StreamDeadline } from "./stream-deadline";
import type { UpstreamReply } from "../upstream/client";
import { isWellFormedChunk } from "./upstream-shape";
import { readUsage, rewriteChatObject, deliveredText, type ReportedUsage, type Rewrite } from "./rewrite";
import type { TokenBudget } from "./request";
import { OutputMeter, relayCap } from "../tokens/output-cap";
import { secondsSinceArrival, timeEngine } from "../metrics/engine-time";
import { requestMetrics } from "../metrics/request-metrics";
import { completionId, countUsage, type ChatCall, type TokenCounting } from "./call";
import { TokenTally } from "../tokens/token-tally";

type ChatObject = Record<string, unknown>;

/** What relaying a chat stream uses: its bounds, the token counter, the log and time to first token. */
export interface ChatStreamDeps extends TokenCounting {
  config: Pick<Config, "sseMaxLineChars" | "sseMaxEventChars" | "streamMaxSeconds">;
  log: Log;
  metrics: MetricsRegistry;
}

/** The upstream broke the stream; nothing is billed and the client gets an error event. */
export class StreamFailure extends Error {}

/** The rewritten chunks with content from one upstream read, and how much text they deliver. */
export interface RelayBatch {
  chunks: ChatObject[];
  /** Characters of content, reasoning and tool-call text in the chunks (what the client is sent). */
  chars: number;
}

/** What a stream's reads share: the rewrite, how the upstream ended, the open choices. */
interface ReadState {
  lastData: number;
  rewrite: Rewrite;
  sawDone: boolean;
  sawFinish: boolean;
  /** Choices that have not finished yet, and the upstream's `created`, for the `length` chunk. */
  unfinished: Set<number>;
  created: number;
}

interface ReadStep {
  batch: RelayBatch;
  failure: StreamFailure | null;
}

export class ChatStream {
  private usage: ReportedUsage | null = null;
  /** The output relayed so far, counted as it goes (see token-tally.ts). */
  private readonly delivered: TokenTally;
  private deliveredChunks = 0;
  /** The relay stopped the upstream at the output cap. */
  private capped = false;
  private readonly meter: OutputMeter;
  /** The first chunk with content was relayed (time to first token recorded). */
  private firstRelayed = false;
  /** Ends the stream as `length` once it ran for SWITCHYARD_STREAM_MAX_SECONDS. */
  private readonly deadline: StreamDeadline;

  constructor(
    private readonly s: ChatStreamDeps,
    private readonly call: ChatCall,
    private readonly response: UpstreamReply,
    private readonly upstream: AbortController,
    budget: TokenBudget,
  ) {
    this.delivered = new TokenTally(s.tokens, call.accountId);
    // The meter admits the delivered text into the tally: one count serves the cap and the bill.
    this.meter = new OutputMeter(relayCap(budget.maxOutput), this.delivered, s.tokens, call.accountId);
    // The clock runs from the moment the upstream accepted the stream; reaching it stops the upstream.
    this.deadline = new StreamDeadline(s.config.streamMaxSeconds * 1000, () => upstream.abort());
  }

  /** The route's idle timeout: how long a relay waits for a client that stopped reading. */
  get idleTimeoutMs(): number {
    return this.response.idleTimeoutMs;
  }

  /**
   * The chunks with content, rewritten, grouped by the upstream read they arrived in, so a relay can
   * frame and write them at once: one write (and one async step) per read instead of one per chunk.
   * Usage-only chunks are held back (the relay sends its own). Ends normally when the upstream
   * completes or the output cap is reached; throws StreamFailure when the upstream breaks.
   */
  async *batches(): AsyncGenerator<RelayBatch> {
    const reader = this.response.body;
    const parser = new SseParser({ maxLineChars: this.s.config.sseMaxLineChars, maxEventChars: this.s.config.sseMaxEventChars });
    // Only data events keep a stream alive: comments and partial lines do not (docs/operate.md "Limits, usage and metrics").
    const idleMs = this.response.idleTimeoutMs;
    const st: ReadState = {
      lastData: Date.now(),
      rewrite: { id: completionId(this.call.requestId), model: this.call.resolved.requestedId, serviceTier: this.call.resolved.tier },
      sawDone: false,
      sawFinish: false,
      unfinished: new Set<number>(),
      created: Math.floor(Date.now() / 1000),
    };
    try {
      for (;;) {
        let read: { done: boolean; value?: Uint8Array } | null;
        try {
          read = this.deadline.reached ? { done: true } : await timeEngine(this.call.requestId, reader.readTransient());
        } catch {
          if (!this.deadline.reached) throw new StreamFailure("upstream connection broke");
          read = { done: true };
        }
        if (this.deadline.reached) {
          // What was read is dropped with the upstream: the stream ends as `length` at once.
          this.s.log.warn("stream reached its maximum duration; ended as length", { request_id: this.call.requestId, max_seconds: this.s.config.streamMaxSeconds });
          this.capped = true;
          yield { chunks: [this.lengthChunk(st)], chars: 0 };
          return;
        }
        const done = read.done;
        // The read is handled in a call of its own, and the batch handed on is the only thing that
        // outlives it: nothing of this read (its bytes, decoded text, events) stays referenced
        // while the relay waits for its client, and its bytes are freed by the next read
        // (readTransient; docs/architecture.md, "Memory per stream").
        let step: ReadStep | null = await this.take(read, parser, st);
        read = null;
        if (this.capped) {
          // Nothing more is read: the upstream is stopped and every open choice ends as `length`.
          this.upstream.abort();
          step.batch.chunks.push(this.lengthChunk(st));
          if (!this.firstRelayed && step.batch.chars > 0) this.recordFirstToken();
          yield step.batch;
          return;
        }
        let failure = step.failure;
        if (!failure && parser.error) failure = new StreamFailure(`upstream sent ${parser.error.message}`);
        if (!failure && !done && Date.now() - st.lastData >= idleMs) failure = new StreamFailure(`upstream sent no data event for ${idleMs} ms`);
        if (failure && (parser.error || !done)) this.s.log.warn("upstream stream failed", { request_id: this.call.requestId, reason: failure.message });
        const batch = step.batch;
        step = null;
        if (batch.chunks.length > 0) {
          if (!this.firstRelayed && batch.chars > 0) this.recordFirstToken();
          yield batch;
        }
        // A long output is counted as it goes; its count sets the pace (see token-tally.ts).
        const counting = this.delivered.caughtUp();
        if (counting) await counting;
        if (failure) throw failure;
        if (done) break;
      }
      if (!st.sawDone && !st.sawFinish && !this.usage) throw new StreamFailure("upstream stream ended early");
    } catch (err) {
      // Nothing more is read: the upstream is let go of at once (a broken bound leaves it sending).
      this.upstream.abort();
      throw err instanceof StreamFailure ? err : new StreamFailure(String(err));
    } finally {
      this.deadline.clear();
    }
  }

  /**
   * The rewritten chunks with content of one upstream read (parsed, checked, admitted under the
   * output cap and tallied), and the failure that ended them, if any. Sets `capped` when the cap
   * stopped them.
   */
  private async take(read: { done: boolean; value?: Uint8Array }, parser: SseParser, st: ReadState): Promise<ReadStep> {
    const events = read.done ? parser.end() : parser.push(read.value!);
    if (events.length > 0) st.lastData = Date.now();
    const batch: RelayBatch = { chunks: [], chars: 0 };
    // A failure ends the stream only after the chunks that came before it in this read.
    for (const ev of events) {
      if (ev.data === "[DONE]") {
        st.sawDone = true;
        continue;
      }
      let obj: ChatObject;
      try {
        obj = JSON.parse(ev.data) as ChatObject;
      } catch {
        return { batch, failure: new StreamFailure("upstream sent a malformed chunk") };
      }
      if (obj.error !== undefined || ev.event === "error") return { batch, failure: new StreamFailure("upstream reported an error mid-stream") };
      if (!isWellFormedChunk(obj)) return { batch, failure: new StreamFailure("upstream sent a chunk of the wrong shape") };
      const usage = readUsage(obj);
      if (usage) this.usage = usage;
      const choices = obj.choices as { index?: unknown; delta?: ChatObject; finish_reason?: unknown }[] | undefined;
      if (!Array.isArray(choices) || choices.length === 0) continue;
      delete obj.usage;
      let text = "";
      for (const c of choices) text += deliveredText(c.delta);
      let fits = this.meter.admit(text);
      // Only near the cap does the meter ask the token worker; the chunk waits for its answer.
      if (fits instanceof Promise) fits = await fits;
      if (!fits) {
        this.capped = true;
        break;
      }
      for (const c of choices) {
        const index = typeof c.index === "number" ? c.index : 0;
        if (c.finish_reason) {
          st.sawFinish = true;
          st.unfinished.delete(index);
        } else st.unfinished.add(index);
      }
      if (typeof obj.created === "number") st.created = obj.created;
      this.deliveredChunks++;
      batch.chars += text.length;
      batch.chunks.push(rewriteChatObject(obj, st.rewrite));
    }
    return { batch, failure: null };
  }

  private recordFirstToken(): void {
    this.firstRelayed = true;
    const seconds = secondsSinceArrival(this.call.requestId);
    if (seconds !== null) requestMetrics(this.s.metrics).timeToFirstToken.observe(seconds, { model: this.call.resolved.requestedId });
  }

  /** The chunk that ends every open choice as `length` (the output cap, or the stream's deadline). */
  private lengthChunk(st: ReadState): ChatObject {
    const ending = [...(st.unfinished.size > 0 ? st.unfinished : [0])].map((index) => ({ index, delta: {}, finish_reason: "length" }));
    return rewriteChatObject({ id: "", object: "chat.completion.chunk", created: st.created, model: "", choices: ending }, st.rewrite);
  }

  /** The client went away: stop the upstream (the relay then bills what was delivered). */
  cancel(): void {
    this.deadline.clear();
    this.upstream.abort();
  }

  /**
   * What a stream that ran to its end consumed: the upstream's usage, or our count without it
   * (counted off the event loop).
   */
  async finalUsage(): Promise<Consumption> {
    if (this.usage && !this.capped) return this.usage;
    // Cut at the cap, the upstream's count (if any came) is not what was delivered.
    return this.counted(0);
  }

  /**
   * What a client that went away consumed: input plus the output its connection took — all the
   * output relayed except its last `notTaken` characters, still queued for it — or null when none was.
   */
  async deliveredUsage(notTaken = 0): Promise<Consumption | null> {
    if (this.deliveredChunks === 0 || this.delivered.length - notTaken <= 0) return null;
    return this.counted(notTaken);
  }

  /** Input (the upstream's count, else ours) and the output delivered but its last `dropLast` characters. */
  private async counted(dropLast: number): Promise<Consumption> {
    const output = this.delivered.total(dropLast);
    if (this.usage) {
      // The upstream's prompt, and what of it its cache read and wrote, with our count of the output.
      const { inputTokens, cachedTokens, cacheWriteTokens } = this.usage;
      return { inputTokens, cachedTokens, cacheWriteTokens, outputTokens: await output };
    }
    return countUsage(this.s, this.call, output);
  }
}
