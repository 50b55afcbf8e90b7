/**
 * The output cap of a relayed stream: a hold covers at most `maxOutput` output tokens (max_tokens ×
 * n, or the model's ceiling × n), so an upstream that ignores max_tokens — or never stops — must
 * not be relayed past it. The relay stops reading the upstream at the cap and ends the stream as
 * `length` (see chat/stream.ts); the charge is clamped to the hold anyway (billing/hold.ts).
 *
 * Counting is cheap and linear: UTF-8 bytes bound o200k tokens from above (a byte-level BPE token
 * covers at least one byte), so no tokenizer runs while the bytes delivered stay within the cap.
 * Past that, the text delivered so far is counted once and each later piece is counted alone and
 * added — an upper bound, since splitting text only adds token boundaries.
 *
 * Our o200k count estimates the upstream's own tokenizer, which may count the same text a little
 * differently; the relay therefore allows a margin (a quarter of the cap plus 16 tokens) before it
 * cuts a stream, so an honest upstream that stops at max_tokens is never cut short. Whatever the
 * margin lets through is not billed beyond the hold.
 */
import { countTextTokens } from "./tokens";

/** The most output tokens (by our count) a stream may deliver for an output budget of `maxOutput`. */
export function relayCap(maxOutput: number): number {
  return maxOutput + Math.ceil(maxOutput / 4) + 16;
}

export class OutputMeter {
  private bytes = 0;
  /** Tokens counted so far, once the bytes passed the cap; -1 while bytes alone bound them. */
  private tokens = -1;
  private chunks = 0;

  constructor(readonly cap: number) {}

  /**
   * Whether a chunk delivering `text` still fits under the cap; counts it when it does.
   * `deliveredBefore` is everything delivered so far (counted once, when bytes stop bounding it).
   * Chunks are capped too, so an upstream streaming empty deltas forever is stopped as well.
   */
  admit(text: string, deliveredBefore: string): boolean {
    if (++this.chunks > 2 * this.cap + 64) return false;
    if (text === "") return true;
    if (this.tokens < 0) {
      const bytes = Buffer.byteLength(text, "utf8");
      if (this.bytes + bytes <= this.cap) {
        this.bytes += bytes;
        return true;
      }
      this.tokens = countTextTokens(deliveredBefore);
    }
    const more = countTextTokens(text);
    if (this.tokens + more > this.cap) return false;
    this.tokens += more;
    return true;
  }
}
