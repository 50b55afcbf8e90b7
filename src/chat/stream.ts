/**
 * Relays an upstream chat-completions SSE stream as rewritten chunk objects, and settles exactly
 * once when it ends (contract §7):
 *   completed          → charge the upstream's usage (or our count when it sent none);
 *   upstream failed    → release: an error is free;
 *   client went away   → charge input plus the output delivered so far, or nothing if none was.
 */
import type { Services } from "../services";
import { chatCost } from "../billing/prices";
import { SseParser } from "../protocols/sse";
import type { UpstreamReply } from "../upstream/client";
import { isWellFormedChunk } from "./upstream-shape";
import { readUsage, rewriteChatObject, deliveredText, usageDetails, type UpstreamUsage } from "./rewrite";
import { countTextTokens } from "./tokens";
import { timeEngine } from "../metrics/engine-time";
import { requestMetrics } from "../metrics/request-metrics";
import { completionId, estimateInput, type ChatCall, type ChatResult } from "./pipeline";

type ChatObject = Record<string, unknown>;

/** The upstream broke the stream; nothing is billed and the client gets an error event. */
export class StreamFailure extends Error {}

export class ChatStream implements AsyncIterable<ChatObject> {
  private usage: UpstreamUsage | null = null;
  private delivered = "";
  private deliveredChunks = 0;
  private finished = false;
  private settlement: Promise<ChatResult | null> | null = null;
  private sawFinish = false;

  constructor(
    private readonly s: Services,
    private readonly call: ChatCall,
    private readonly response: UpstreamReply,
    private readonly upstream: AbortController,
  ) {}

  /** Chunks with content, rewritten; usage-only chunks are held back (we send our own). */
  async *[Symbol.asyncIterator](): AsyncIterator<ChatObject> {
    for await (const batch of this.batches()) yield* batch;
  }

  /**
   * The same chunks, grouped by the upstream read they arrived in, so a relay can frame and write
   * them at once: one write (and one async step) per read instead of one per chunk.
   */
  async *batches(): AsyncGenerator<ChatObject[]> {
    const reader = this.response.body;
    const parser = new SseParser();
    const rewrite = { id: completionId(this.call.requestId), model: this.call.resolved.requestedId, serviceTier: this.call.resolved.tier };
    let sawDone = false;
    try {
      for (;;) {
        let read: { done: boolean; value?: Uint8Array };
        try {
          read = await timeEngine(this.call.requestId, reader.read());
        } catch {
          throw new StreamFailure("upstream connection broke");
        }
        const events = read.done ? parser.end() : parser.push(read.value!);
        const batch: ChatObject[] = [];
        // A failure ends the stream only after the chunks that came before it in this read.
        let failure: StreamFailure | null = null;
        for (const ev of events) {
          if (ev.data === "[DONE]") {
            sawDone = true;
            continue;
          }
          let obj: ChatObject;
          try {
            obj = JSON.parse(ev.data) as ChatObject;
          } catch {
            failure = new StreamFailure("upstream sent a malformed chunk");
            break;
          }
          if (obj.error !== undefined || ev.event === "error") {
            failure = new StreamFailure("upstream reported an error mid-stream");
            break;
          }
          if (!isWellFormedChunk(obj)) {
            failure = new StreamFailure("upstream sent a chunk of the wrong shape");
            break;
          }
          const usage = readUsage(obj);
          if (usage) this.usage = usage;
          const choices = obj.choices as { delta?: ChatObject; finish_reason?: unknown }[] | undefined;
          if (!Array.isArray(choices) || choices.length === 0) continue;
          delete obj.usage;
          for (const c of choices) {
            this.delivered += deliveredText(c.delta);
            if (c.finish_reason) this.sawFinish = true;
          }
          this.deliveredChunks++;
          batch.push(rewriteChatObject(obj, rewrite));
        }
        if (batch.length > 0) yield batch;
        if (failure) throw failure;
        if (read.done) break;
      }
      if (!sawDone && !this.sawFinish && !this.usage) throw new StreamFailure("upstream stream ended early");
    } catch (err) {
      if (!this.finished) this.fail();
      throw err instanceof StreamFailure ? err : new StreamFailure(String(err));
    }
  }

  /** After the iteration completed: settle the actual cost; resolves once durable. */
  complete(): Promise<ChatResult | null> {
    if (!this.settlement) {
      this.finished = true;
      const usage = this.usage ?? { prompt: estimateInput(this.call.request), completion: countTextTokens(this.delivered) };
      this.settlement = this.settle(usage.prompt, usage.completion);
    }
    return this.settlement;
  }

  /** The client went away: stop the upstream and bill what was delivered. */
  cancel(): Promise<ChatResult | null> {
    this.upstream.abort();
    if (!this.settlement) {
      this.finished = true;
      if (this.deliveredChunks === 0 || this.delivered === "") {
        this.s.ledger.release(this.call.requestId);
        this.settlement = Promise.resolve(null);
      } else {
        const input = this.usage?.prompt ?? estimateInput(this.call.request);
        this.settlement = this.settle(input, countTextTokens(this.delivered));
      }
    }
    return this.settlement;
  }

  /**
   * Ends the stream unbilled when something other than the upstream broke it (a framing error,
   * a failed settlement): stops the upstream and releases the hold unless a charge already
   * settled. Safe to call at any point, any number of times.
   */
  abandon(): void {
    if (!this.settlement) this.fail();
    else this.upstream.abort();
  }

  private fail(): void {
    this.finished = true;
    requestMetrics(this.s).upstreamErrors.inc({ endpoint: this.call.endpoint, kind: "mid_stream" });
    this.upstream.abort();
    this.s.ledger.release(this.call.requestId);
    this.settlement = Promise.resolve(null);
  }

  private async settle(inputTokens: number, outputTokens: number): Promise<ChatResult> {
    const { entry, multiplier, tier } = this.call.resolved;
    const amount = chatCost(entry, multiplier, { inputTokens, outputTokens });
    const st = await this.s.ledger.settle({ requestId: this.call.requestId, amount, serviceTier: tier, inputTokens, outputTokens });
    // Detail counts only when the upstream's usage is what was billed (not a disconnect's count).
    const details = this.usage && this.usage.prompt === inputTokens && this.usage.completion === outputTokens ? usageDetails(this.usage) : {};
    return { inputTokens, outputTokens, charged: st.charged, serviceTier: tier, ...details };
  }
}
