/**
 * The tokens of a text that arrives in pieces (a relayed stream's output), counted as it grows
 * instead of kept whole: a stream's output may be megabytes, and keeping it for one count at the
 * end held all of it in memory for every open stream.
 *
 * Most outputs stay short and are never counted unless asked (the upstream reports usage). Past
 * KEEP_CHARS + FLUSH_CHARS, the older text is counted in the worker, one part at a time (the
 * producer can wait for it: caughtUp), cut where the tokenizer starts a new token anyway — a
 * space before a letter: o200k's pre-tokenizer always begins a piece " word" there — so the sum
 * is exactly the count of the whole text; text without such a point (a run of one letter, CJK)
 * is cut after HARD_CUT_CHARS, a few tokens off at most. The newest KEEP_CHARS stay uncounted,
 * so the count can leave out a last stretch that never reached the client (total(dropLast)).
 */
import type { TokenCounter } from "./token-counter";
import { isLetterAt } from "./tokens";

/**
 * More text than a relay can have read but not handed to its client when it ends: its queue
 * (below the 32 KiB high-water mark when it last wrote), the write that took it over the mark,
 * and the batch read after the client was cut off, which is never written — each of the last
 * two one upstream read of at most 16 KiB (http/streaming.ts, upstream/timeouts.ts). Text is at
 * most as many UTF-16 units as its UTF-8 bytes, so 64 Ki characters; the rest is margin. A
 * smaller window (48 Ki) let the text dropped from a cut-off stream's bill reach into what had
 * already been counted, and the client paid for a few hundred characters it never got.
 */
export const KEEP_CHARS = 80 * 1024;
const FLUSH_CHARS = 16 * 1024;
const HARD_CUT_CHARS = 32 * 1024;
/** Cut points are remembered at most once per this many characters (a few hundred per tail). */
const CUT_SPACING = 1024;

export class TokenTally {
  /**
   * The uncounted tail, as the pieces it arrived in: a part to count is joined once when it is cut
   * off, and the rest is never copied (a string grown by += and cut by slice was copied whole at
   * every cut: several times the text, a large share of a relay's garbage).
   */
  private pieces: string[] = [];
  private tailLength = 0;
  private chars = 0;
  /** Exact cut points in the tail (space before a letter), oldest first, CUT_SPACING apart. */
  private safe: number[] = [];
  /** A space ending the tail: an exact cut if the next piece starts with a letter. */
  private spaceAt = -1;
  private done = 0;
  private inFlight: Promise<void> | null = null;
  private failure: unknown = null;

  constructor(
    private readonly counter: TokenCounter,
    /** Whose lane the counts wait in (see queue.ts). */
    private readonly account = "",
  ) {}

  /** Characters added so far. */
  get length(): number {
    return this.chars;
  }

  add(text: string): void {
    if (!text) return;
    const base = this.tailLength;
    if (this.spaceAt > 0 && isLetterAt(text, 0)) this.remember(this.spaceAt);
    this.spaceAt = -1;
    for (let j = text.indexOf(" "); j >= 0; j = text.indexOf(" ", j + 1)) {
      if (j + 1 === text.length) this.spaceAt = base + j;
      else if (base + j > 0 && isLetterAt(text, j + 1)) this.remember(base + j);
    }
    this.chars += text.length;
    this.pieces.push(text);
    this.tailLength += text.length;
    this.countOlder();
  }

  private remember(cut: number): void {
    const last = this.safe[this.safe.length - 1];
    if (last === undefined || cut - last >= CUT_SPACING) this.safe.push(cut);
  }

  /**
   * Resolves once no part is being counted (a producer waits here before adding more); undefined
   * when none is (nothing to wait for).
   */
  caughtUp(): Promise<void> | undefined {
    return this.inFlight ?? undefined;
  }

  /**
   * The tokens of everything added, except its last `dropLast` characters (text that was relayed
   * but never reached the client). Those must be among the newest KEEP_CHARS, else more than
   * them is counted.
   */
  async total(dropLast = 0): Promise<number> {
    while (this.inFlight) await this.inFlight;
    const end = Math.max(0, this.tailLength - dropLast);
    const rest = end > 0 ? await this.counter.text(this.pieces.join("").slice(0, end), { account: this.account }) : 0;
    if (this.failure) throw this.failure;
    return this.done + rest;
  }

  /** The UTF-16 unit at `at` in the tail. */
  private charCodeAt(at: number): number {
    for (const p of this.pieces) {
      if (at < p.length) return p.charCodeAt(at);
      at -= p.length;
    }
    return NaN;
  }

  /** Removes and returns the first `n` characters of the tail (joined once). */
  private takeFirst(n: number): string {
    let whole = 0;
    let len = 0;
    while (whole < this.pieces.length && len + this.pieces[whole]!.length <= n) len += this.pieces[whole++]!.length;
    const taken = this.pieces.slice(0, whole);
    const rest = this.pieces.slice(whole);
    if (len < n) {
      const split = rest[0]!;
      taken.push(split.slice(0, n - len));
      rest[0] = split.slice(n - len);
    }
    this.pieces = rest;
    this.tailLength -= n;
    return taken.join("");
  }

  /** Counts the part of the tail older than KEEP_CHARS, once it is long, one part at a time. */
  private countOlder(): void {
    if (this.inFlight || this.tailLength < KEEP_CHARS + FLUSH_CHARS) return;
    const limit = this.tailLength - KEEP_CHARS;
    let cut = -1;
    for (const p of this.safe) if (p <= limit) cut = p;
    if (cut <= 0) {
      if (this.tailLength < KEEP_CHARS + HARD_CUT_CHARS) return;
      cut = limit;
      const last = this.charCodeAt(cut - 1);
      if (last >= 0xd800 && last <= 0xdbff) cut--;
    }
    const part = this.takeFirst(cut);
    this.safe = this.safe.filter((p) => p > cut).map((p) => p - cut);
    this.spaceAt = this.spaceAt >= cut ? this.spaceAt - cut : -1;
    this.inFlight = this.counter.text(part, { account: this.account }).then(
      (n) => {
        this.done += n;
      },
      (err) => {
        this.failure ??= err;
      },
    ).finally(() => {
      this.inFlight = null;
      this.countOlder();
    });
  }
}
