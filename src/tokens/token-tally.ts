/**
 * The tokens of a text that arrives in pieces (a relayed stream's output), counted as it grows
 * instead of kept whole: a stream's output may be megabytes, and keeping it for one count at the
 * end held all of it in memory for every open stream. It is the one count of a stream's output:
 * the output cap (output-cap.ts) reads its bound and asks it to count ahead, and billing asks it
 * for the total.
 *
 * Most outputs stay short and are never counted unless asked (the upstream reports usage). Past
 * KEEP_CHARS + FLUSH_CHARS, or sooner once asked to count ahead (countAhead), the text is counted
 * in the worker, one part at a time (the producer can wait for it: caughtUp), cut where the
 * tokenizer starts a new token anyway — a space before a letter: o200k's pre-tokenizer always
 * begins a piece " word" there — so the sum is exactly the count of the whole text; text without
 * such a point (a run of one letter, CJK) is cut after HARD_CUT_CHARS, a token or two off at most
 * per cut (splitting text only adds token boundaries: the sum is never below the whole's count).
 * The text of the newest KEEP_CHARS is kept (counted or not), so the count can leave out a last
 * stretch that never reached the client (total(dropLast)): a part cut off there is counted again
 * up to that point, and each part older than the window is let go with only its count kept.
 */
import type { TokenCounter } from "./token-counter";
import { isLetterAt } from "./tokens";
import { freeNow } from "../runtime/memory";

/**
 * More text than a relay can have read but not handed to its client when it ends: its queue
 * (below the 16 KiB high-water mark when it last wrote), the write that took it over the mark,
 * and the batch read after the client was cut off, which is never written — each of the last
 * two one upstream read of at most 8 KiB (metering/producer-stream.ts, upstream/http1/idle-reader.ts). Text is at
 * most as many UTF-16 units as its UTF-8 bytes, so 32 Ki characters; the rest is margin. A
 * window smaller than that bound (48 Ki when it was 64 Ki) let the text dropped from a cut-off
 * stream's bill reach into what had already been counted, and the client paid for a few hundred
 * characters it never got. Each open stream keeps this much text, so it is no larger.
 */
export const KEEP_CHARS = 40 * 1024;
const FLUSH_CHARS = 16 * 1024;
/**
 * Text with no exact cut is cut this long. The uncounted tail reaches it before it is sent, and
 * every open stream keeps it in its window: 32 Ki cost ~0.1 MB more per stream at the peak of the
 * stream-memory bench, for one cut in 16 Ki characters instead of 32 Ki (a token or two each).
 */
const HARD_CUT_CHARS = 16 * 1024;
/** Cut points are remembered at most once per this many characters (a few hundred per tail). */
const CUT_SPACING = 1024;

/** A part of the text sent to be counted. */
interface Part {
  chars: number;
  /** Its text is still in the window (it may yet be cut by total's dropLast). */
  kept: boolean;
  /** NaN while it is being counted. */
  tokens: number;
}

/**
 * The text from some position to the end, in one buffer of the tally's own that grows by doubling
 * (a buffer outgrown is freed at once) and is compacted as its start moves on: one byte per
 * character while the text is ASCII, two (UTF-16) from the first piece that is not. Copying a
 * piece in and reading a stretch out are one native call each, and what is read out of ASCII is
 * a one-byte string, as the pieces were.
 */
const NO_BYTES = Buffer.from(new ArrayBuffer(0));

class TextWindow {
  private wide = false;
  /** Its own ArrayBuffer (never a pooled one: an outgrown buffer is freed by detaching it). */
  private bytes = NO_BYTES;
  /** Where position `start` is in the buffer, in characters. */
  private head = 0;
  /** Absolute positions of the first character kept and of the end. */
  start = 0;
  end = 0;

  /** `ascii`: the piece is all ASCII (its UTF-8 length is its length). */
  append(text: string, ascii: boolean): void {
    if (!ascii && !this.wide) this.widen();
    const unit = this.wide ? 2 : 1;
    const length = this.end - this.start;
    const room = this.bytes.byteLength / unit;
    if (this.head + length + text.length > room) {
      // Compacted while what is kept fills at most seven eighths of the buffer: a window that
      // slides at its full size (KEEP_CHARS and a part being cut, ~56 Ki characters) then stays
      // in one buffer instead of doubling it for every open stream. Each compaction copies at
      // most the window, once per eighth of the buffer appended.
      if (length + text.length <= room * 0.875) this.bytes.copyWithin(0, unit * this.head, unit * (this.head + length));
      // Grown to half again what it must hold, not to twice: amortized the same, and a full
      // window takes ~1.5 times its text, not twice or more.
      else this.regrow(Math.ceil(1.5 * (length + text.length)));
      this.head = 0;
    }
    this.bytes.write(text, unit * (this.head + length), unit * text.length, this.wide ? "utf16le" : "latin1");
    this.end += text.length;
  }

  /** A buffer of `chars` characters holding what is kept, at its start; the old one freed. */
  private regrow(chars: number, widen = false): void {
    const unit = this.wide ? 2 : 1;
    const length = this.end - this.start;
    const next = Buffer.from(new ArrayBuffer((widen ? 2 : unit) * Math.max(chars, 1024)));
    if (widen) for (let i = 0; i < length; i++) next[2 * i] = this.bytes[this.head + i]!;
    else this.bytes.copy(next, 0, unit * this.head, unit * (this.head + length));
    if (this.bytes !== NO_BYTES) freeNow(this.bytes.buffer);
    this.bytes = next;
    this.head = 0;
  }

  private widen(): void {
    this.regrow(Math.max(this.bytes.byteLength, 2 * (this.end - this.start)), true);
    this.wide = true;
  }

  /** Lets go of everything before absolute position `at`. */
  dropBefore(at: number): void {
    if (at <= this.start) return;
    const to = Math.min(at, this.end);
    this.head += to - this.start;
    this.start = to;
  }

  /** The text from absolute position `from` to `to`. */
  read(from: number, to: number): string {
    if (to <= from) return "";
    const unit = this.wide ? 2 : 1;
    return this.bytes.toString(this.wide ? "utf16le" : "latin1", unit * (this.head + from - this.start), unit * (this.head + to - this.start));
  }

  charCodeAt(at: number): number {
    const i = this.head + at - this.start;
    return this.wide ? this.bytes[2 * i]! | (this.bytes[2 * i + 1]! << 8) : this.bytes[i]!;
  }
}

export class TokenTally {
  /**
   * The text kept: the kept parts' and the uncounted tail (its last `tailLength` characters), in
   * a buffer of its own rather than as the strings it arrived in. Those stayed referenced across
   * many reads of a relay, so young collections promoted all of a stream's text to the old
   * generation, garbage there until a full collection (docs/architecture.md, "Memory per stream").
   */
  private readonly text = new TextWindow();
  private tailLength = 0;
  /** UTF-8 bytes of the uncounted tail: its bound in tokens. */
  private tailBytes = 0;
  private chars = 0;
  private allBytes = 0;
  /** Exact cut points in the tail (space before a letter), oldest first, CUT_SPACING apart. */
  private safe: number[] = [];
  /** A space ending the tail: an exact cut if the next piece starts with a letter. */
  private spaceAt = -1;
  /** Tokens of the parts let go (older than the window). */
  private done = 0;
  /** Counted parts whose text is still kept, oldest first, and their characters and tokens (those counted). */
  private kept: Part[] = [];
  private keptChars = 0;
  private keptTokens = 0;
  private inFlight: Promise<void> | null = null;
  /** UTF-8 bytes of the part being counted: its bound until its count arrives. */
  private inFlightBytes = 0;
  /** Asked to count ahead: parts are counted as soon as they are long enough, not once they leave the window. */
  private ahead = false;
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

  /** UTF-8 bytes added so far. */
  get bytes(): number {
    return this.allBytes;
  }

  /**
   * An upper bound of the tokens of everything added: the parts counted, plus the bytes of the
   * rest (a byte-level BPE token covers at least one byte).
   */
  bound(): number {
    return this.done + this.keptTokens + this.inFlightBytes + this.tailBytes;
  }

  /** `bytes`: its UTF-8 length, when the caller knows it. */
  add(text: string, bytes = Buffer.byteLength(text, "utf8")): void {
    if (!text) return;
    const base = this.tailLength;
    if (this.spaceAt > 0 && isLetterAt(text, 0)) this.remember(this.spaceAt);
    this.spaceAt = -1;
    for (let j = text.indexOf(" "); j >= 0; j = text.indexOf(" ", j + 1)) {
      if (j + 1 === text.length) this.spaceAt = base + j;
      else if (base + j > 0 && isLetterAt(text, j + 1)) this.remember(base + j);
    }
    this.chars += text.length;
    this.allBytes += bytes;
    this.text.append(text, bytes === text.length);
    this.tailLength += text.length;
    this.tailBytes += bytes;
    this.letGo();
    this.countOlder();
    this.trim();
  }

  /**
   * Counts the tail now, up to its last exact cut (none: nothing is sent), so that the bound is
   * close: for a caller about to wait for caughtUp() near the cap.
   */
  countNow(): void {
    this.ahead = true;
    this.countOlder(true);
  }

  /** From now on the text is counted as it comes (in parts of FLUSH_CHARS or so), not only once it leaves the window. */
  countAhead(): void {
    if (this.ahead) return;
    this.ahead = true;
    this.countOlder();
  }

  /**
   * The tokens counted so far (an upper bound of the text they cover) and the characters not yet
   * counted (the newest), which start where a new token starts: with their count added, a bound of
   * the whole.
   * Meant for a caller that waited for caughtUp(): a part in flight is in neither.
   */
  uncounted(): { counted: number; chars: number } {
    return { counted: this.done + this.keptTokens, chars: this.tailLength };
  }

  /** The last `n` characters added (n at most the uncounted tail's length), joined. */
  last(n: number): string {
    return this.text.read(this.chars - Math.min(n, this.tailLength), this.chars);
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
    if (this.failure) throw this.failure;
    const end = this.chars - Math.max(0, dropLast);
    let at = this.chars - this.tailLength - this.keptChars;
    let sum = this.done;
    for (const part of this.kept) {
      if (at >= end) return sum;
      if (at + part.chars <= end) sum += part.tokens;
      // A part starts where a token starts: its beginning up to `end` counts exactly. (One older
      // than the window has no text: `end` reached past the window, and all of it is counted.)
      else return sum + (part.kept ? await this.counter.text(this.text.read(at, end), { account: this.account }) : part.tokens);
      at += part.chars;
    }
    if (end <= at) return sum;
    return sum + (await this.counter.text(this.text.read(at, end), { account: this.account }));
  }

  /** The UTF-16 unit at `at` in the tail. */
  private charCodeAt(at: number): number {
    return this.text.charCodeAt(this.chars - this.tailLength + at);
  }

  /** Removes and returns the first `n` characters of the tail. */
  private takeFirst(n: number): string {
    const from = this.chars - this.tailLength;
    this.tailLength -= n;
    return this.text.read(from, from + n);
  }

  /** The window keeps text from the first part whose text may yet be needed, else from the tail. */
  private trim(): void {
    let at = this.chars - this.tailLength - this.keptChars;
    for (const part of this.kept) {
      if (part.kept) break;
      at += part.chars;
    }
    this.text.dropBefore(at);
  }

  /** Lets go of the text of counted parts that left the window (only their counts are needed). */
  private letGo(): void {
    const windowStart = this.chars - KEEP_CHARS;
    let start = this.chars - this.tailLength - this.keptChars;
    while (this.kept.length > 0) {
      const part = this.kept[0]!;
      if (Number.isNaN(part.tokens) || start + part.chars > windowStart) return;
      start += part.chars;
      this.kept.shift();
      this.keptChars -= part.chars;
      this.keptTokens -= part.tokens;
      this.done += part.tokens;
    }
  }

  /**
   * Counts the next part of the tail, one part at a time: once it is long, the part older than
   * KEEP_CHARS; counting ahead, all of it from FLUSH_CHARS on.
   */
  private countOlder(now = false): void {
    if (this.inFlight || this.failure || this.tailLength < (now ? 1 : this.ahead ? FLUSH_CHARS : KEEP_CHARS + FLUSH_CHARS)) return;
    const limit = this.ahead || now ? this.tailLength : this.tailLength - KEEP_CHARS;
    let cut = -1;
    for (const p of this.safe) if (p <= limit) cut = p;
    if (cut <= 0) {
      if (now || this.tailLength < (this.ahead ? HARD_CUT_CHARS : KEEP_CHARS + HARD_CUT_CHARS)) return;
      cut = limit;
      const last = this.charCodeAt(cut - 1);
      if (last >= 0xd800 && last <= 0xdbff) cut--;
    }
    const text = this.takeFirst(cut);
    const bytes = Buffer.byteLength(text, "utf8");
    this.tailBytes -= bytes;
    this.safe = this.safe.filter((p) => p > cut).map((p) => p - cut);
    this.spaceAt = this.spaceAt >= cut ? this.spaceAt - cut : -1;
    // A part older than the window is sent and not kept: only its count is needed.
    const part: Part = { chars: text.length, kept: this.tailLength < KEEP_CHARS, tokens: NaN };
    this.kept.push(part);
    this.keptChars += text.length;
    this.inFlightBytes = bytes;
    this.inFlight = this.counter.text(text, { account: this.account }).then(
      (n) => {
        part.tokens = n;
        this.keptTokens += n;
      },
      (err) => {
        this.failure ??= err;
        // Uncounted, its bytes stay its bound.
        part.tokens = bytes;
        this.keptTokens += bytes;
      },
    ).finally(() => {
      this.inFlight = null;
      this.inFlightBytes = 0;
      this.letGo();
      this.countOlder();
      this.trim();
    });
  }
}
