/**
 * The output cap of a relayed stream: a hold covers at most `maxOutput` output tokens (max_tokens ×
 * n, or the model's ceiling × n), so an upstream that ignores max_tokens — or never stops — must
 * not be relayed past it. The relay stops reading the upstream at the cap and ends the stream as
 * `length` (see chat/stream.ts); the charge is clamped to the hold anyway (billing/hold.ts).
 *
 * Counting is cheap, linear, bounded in memory and never on the event loop: UTF-8 bytes bound o200k
 * tokens from above (a byte-level BPE token covers at least one byte), so while the tokens counted
 * so far plus the bytes not yet counted stay within the cap no chunk waits. Text not yet counted
 * is sent to the token worker in the background once it reaches FLUSH_CHARS (so a long stream
 * keeps at most that much of it); only when the bound no longer proves a chunk fits does the chunk
 * wait for the uncounted text and itself to be counted. Counts of separate pieces are added — an
 * upper bound, since splitting text only adds token boundaries. Each exact count leaves headroom
 * for a good part of the remaining cap in bytes, so a stream waits a few dozen times at most on its
 * way to the cap, and an output that ends well below it never waits. The first sixth of the cap
 * is not counted at all: its bytes stay its bound (UNCOUNTED_SHARE), so a stream that ends within
 * it sends nothing to the token worker (the token tally, token-tally.ts, counts what billing needs).
 *
 * Our o200k count estimates the upstream's own tokenizer, which may count the same text a little
 * differently; the relay therefore allows a margin (a quarter of the cap plus 16 tokens) before it
 * cuts a stream, so an honest upstream that stops at max_tokens is never cut short. Whatever the
 * margin lets through is not billed beyond the hold.
 */
import type { TokenCounter } from "./token-counter";

/** Uncounted text past this many characters is counted in the background. */
const FLUSH_CHARS = 16 * 1024;
/**
 * The first cap / UNCOUNTED_SHARE of the bound is taken in bytes and never counted. It costs an
 * honest stream at most that share of the cap (bytes overstate its tokens), within the margin
 * relayCap allows (at least a fifth of the cap), and spares the counting of streams that end far
 * below their cap — most streams, and all of those with a large n or max_tokens.
 */
const UNCOUNTED_SHARE = 6;

/** The most output tokens (by our count) a stream may deliver for an output budget of `maxOutput`. */
export function relayCap(maxOutput: number): number {
  return maxOutput + Math.ceil(maxOutput / 4) + 16;
}

export class OutputMeter {
  /** Tokens counted so far (an upper bound of the text they cover). */
  private tokens = 0;
  /** Bytes of the text being counted in the background (its bound until the count arrives). */
  private countingBytes = 0;
  private counting: Promise<void> | null = null;
  /** Text admitted and not yet sent to be counted, and its UTF-8 bytes. */
  private uncounted = "";
  private uncountedBytes = 0;
  private chunks = 0;

  constructor(
    readonly cap: number,
    private readonly counter: TokenCounter,
    /** Whose lane the counts wait in (see queue.ts). */
    private readonly account = "",
  ) {}

  /**
   * Whether a chunk delivering `text` still fits under the cap; it is then counted as delivered.
   * A promise only when the byte bound cannot tell and the token worker must count. Chunks are
   * capped too, so an upstream streaming empty deltas forever is stopped as well.
   */
  admit(text: string): boolean | Promise<boolean> {
    if (++this.chunks > 2 * this.cap + 64) return false;
    if (text === "") return true;
    const bytes = Buffer.byteLength(text, "utf8");
    const bound = this.tokens + this.countingBytes + this.uncountedBytes + bytes;
    if (bound <= this.cap / UNCOUNTED_SHARE) {
      // Far below the cap: the text's bytes are its bound for good, and it is neither kept nor
      // counted (a stream that stays here costs the token worker nothing).
      this.tokens += bytes;
      return true;
    }
    if (bound <= this.cap) {
      this.uncounted += text;
      this.uncountedBytes += bytes;
      if (this.uncounted.length >= FLUSH_CHARS && !this.counting) this.countInBackground();
      return true;
    }
    return this.admitCounted(text);
  }

  private async admitCounted(text: string): Promise<boolean> {
    try {
      while (this.counting) await this.counting;
      const more = await this.counter.count([this.uncounted, text], { account: this.account });
      if (this.tokens + more > this.cap) return false;
      this.tokens += more;
      this.uncounted = "";
      this.uncountedBytes = 0;
      return true;
    } catch {
      // Without a count nothing proves the chunk fits: the stream ends at the cap (the charge is
      // clamped to the hold either way).
      return false;
    }
  }

  private countInBackground(): void {
    const part = this.uncounted;
    const partBytes = this.uncountedBytes;
    this.uncounted = "";
    this.uncountedBytes = 0;
    this.countingBytes = partBytes;
    this.counting = this.counter.text(part, { account: this.account }).then(
      (n) => {
        this.tokens += n;
      },
      // Uncounted, its bytes stay its bound.
      () => {
        this.tokens += partBytes;
      },
    ).finally(() => {
      this.countingBytes = 0;
      this.counting = null;
    });
  }
}
