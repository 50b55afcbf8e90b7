/**
 * The output cap of a relayed stream: a hold covers at most `maxOutput` output tokens (max_tokens ×
 * n, or the model's ceiling × n), so an upstream that ignores max_tokens — or never stops — must
 * not be relayed past it. The relay stops reading the upstream at the cap and ends the stream as
 * `length` (see chat/stream.ts); the charge is clamped to the hold anyway (billing/hold.ts).
 *
 * Counting is cheap, linear, bounded in memory and never on the event loop, and the stream's text
 * is counted once: the meter keeps no text of its own but admits it into the stream's token tally
 * (token-tally.ts), whose bound — the tokens of the parts it counted plus the UTF-8 bytes of the
 * rest, since bytes bound o200k tokens from above (a byte-level BPE token covers at least one
 * byte) — proves most chunks fit without waiting. Past the first sixth of the cap
 * (UNCOUNTED_SHARE) the meter asks the tally to count ahead, in the background, so that its bound
 * stays close; only when the bound no longer proves a chunk fits does the chunk wait for the
 * tally's count and a count of the text not yet counted and itself. Counts of separate pieces are
 * added — an upper bound, since splitting text only adds token boundaries. Each exact count leaves
 * headroom for a good part of the remaining cap in bytes, so a stream waits a few dozen times at
 * most on its way to the cap, and an output that ends well below it never waits; one that ends
 * within the first sixth is not counted for the cap at all (the tally counts what billing needs).
 *
 * Our o200k count estimates the upstream's own tokenizer, which may count the same text a little
 * differently; the relay therefore allows a margin (a quarter of the cap plus 16 tokens) before it
 * cuts a stream, so an honest upstream that stops at max_tokens is never cut short. Whatever the
 * margin lets through is not billed beyond the hold.
 */
import type { TokenCounter } from "./token-counter";
import type { TokenTally } from "./token-tally";

/**
 * Up to cap / UNCOUNTED_SHARE the bytes are bound enough and nothing is counted ahead. It costs an
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
  private chunks = 0;
  /** The last exact count: the tally's first `chars` characters (`bytes` bytes) are at most `tokens` tokens. */
  private exact: { tokens: number; bytes: number; chars: number } | null = null;

  constructor(
    readonly cap: number,
    /** The stream's output, which admitted text is added to. */
    private readonly tally: TokenTally,
    private readonly counter: TokenCounter,
    /** Whose lane the counts wait in (see queue.ts). */
    private readonly account = "",
  ) {}

  /**
   * Whether a chunk delivering `text` still fits under the cap; it is then added to the tally as
   * delivered. A promise only when the bound cannot tell and the token worker must count. Chunks
   * are capped too, so an upstream streaming empty deltas forever is stopped as well.
   */
  admit(text: string): boolean | Promise<boolean> {
    if (++this.chunks > 2 * this.cap + 64) return false;
    if (text === "") return true;
    const bytes = Buffer.byteLength(text, "utf8");
    const bound = this.bound() + bytes;
    if (bound <= this.cap) {
      this.tally.add(text, bytes);
      if (bound > this.cap / UNCOUNTED_SHARE) this.tally.countAhead();
      return true;
    }
    return this.admitCounted(text, bytes);
  }

  /** An upper bound of the tokens admitted so far: the tally's, or the last exact count's plus the bytes since. */
  private bound(): number {
    const b = this.tally.bound();
    return this.exact ? Math.min(b, this.exact.tokens + this.tally.bytes - this.exact.bytes) : b;
  }

  private async admitCounted(text: string, bytes: number): Promise<boolean> {
    try {
      // The tally counts what it has up to its last exact cut: the bound is then close, and
      // that text is not counted again for the bill.
      this.tally.countNow();
      for (let counting = this.tally.caughtUp(); counting; counting = this.tally.caughtUp()) await counting;
      if (this.bound() + bytes <= this.cap) {
        this.tally.add(text, bytes);
        return true;
      }
      // The text since the last exact count, or the text the tally has not counted, whichever is
      // shorter, is counted with the chunk: each character is counted about once here.
      const { counted, chars } = this.tally.uncounted();
      const since = this.exact ? this.tally.length - this.exact.chars : Infinity;
      const [base, n] = since < chars ? [this.exact!.tokens, since] : [counted, chars];
      const tokens = base + (await this.counter.count([this.tally.last(n), text], { account: this.account }));
      if (tokens > this.cap) return false;
      this.tally.add(text, bytes);
      this.exact = { tokens, bytes: this.tally.bytes, chars: this.tally.length };
      return true;
    } catch {
      // Without a count nothing proves the chunk fits: the stream ends at the cap (the charge is
      // clamped to the hold either way).
      return false;
    }
  }
}
