/**
 * Server-sent events: an incremental parser for upstream streams and a framer for ours.
 * Pure and allocation-light; the relay hot path runs through here for every chunk.
 *
 * Bounded and linear: each character is searched for a line end once (an unfinished line is kept
 * as the pieces it arrived in, never rescanned), a line longer than `maxLineChars` and an event
 * whose fields pass `maxEventChars` stop the parser (`error`), so an upstream that never sends a
 * newline, or data lines without the blank line that ends an event, costs bounded memory and
 * time (docs/operate.md "Limits, usage and metrics").
 */

export interface SseEvent {
  event: string | null;
  data: string;
}

/** Default bounds (characters of decoded text): 1 MiB each. */
export const SSE_MAX_LINE_CHARS = 1024 * 1024;
export const SSE_MAX_EVENT_CHARS = 1024 * 1024;

export interface SseLimits {
  /** The longest line accepted, in characters (its line end not counted). */
  maxLineChars?: number;
  /** The most characters of field values (data lines and event name) one event may gather. */
  maxEventChars?: number;
}

/** A stream broke a bound: the parser takes nothing more. */
export class SseLimitExceeded extends Error {
  constructor(readonly bound: "line" | "event", readonly limit: number) {
    super(bound === "line" ? `an SSE line longer than ${limit} characters` : `an SSE event larger than ${limit} characters`);
  }
}

const LF = 10;
const CR = 13;

/** Splits a byte stream into SSE events (handles \n, \r\n, multi-line data, comments). */
export class SseParser {
  /** The unfinished line: the pieces it arrived in (searched already), and their total length. */
  private pending: string[] = [];
  private pendingChars = 0;
  private readonly decoder = new TextDecoder();
  private dataLines: string[] = [];
  private eventChars = 0;
  private eventName: string | null = null;
  private readonly maxLine: number;
  private readonly maxEvent: number;
  /** Set once a bound was broken: push() and end() return nothing from then on. */
  error: SseLimitExceeded | null = null;
  /** Characters searched for a line end so far (each at most once: see the tests). */
  scanned = 0;

  constructor(limits: SseLimits = {}) {
    this.maxLine = limits.maxLineChars ?? SSE_MAX_LINE_CHARS;
    this.maxEvent = limits.maxEventChars ?? SSE_MAX_EVENT_CHARS;
  }

  /**
   * The events completed by `chunk`. When it breaks a bound, the events completed before the
   * break are returned and `error` is set.
   */
  push(chunk: Uint8Array | string): SseEvent[] {
    if (this.error) return [];
    if (typeof chunk === "string") return this.pushText(chunk);
    // The bytes after the last line end are decoded apart: the unfinished line kept for the next
    // read is then a string of its own, not a slice that would keep this read's whole text alive
    // (a slice shares its string's characters) while the relay waits for its client.
    const nl = chunk.lastIndexOf(LF);
    if (nl < 0 || nl === chunk.byteLength - 1) return this.pushText(this.decoder.decode(chunk, { stream: true }));
    const events = this.pushText(this.decoder.decode(chunk.subarray(0, nl + 1), { stream: true }));
    if (this.error) return events;
    // No line end in it: it is only searched and kept.
    this.pushText(this.decoder.decode(chunk.subarray(nl + 1), { stream: true }));
    return events;
  }

  private pushText(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    if (this.pendingChars > 0 || this.pending.length > 0) {
      // Only the new text is searched: the pieces before it hold no line end.
      const nl = this.find(text, 0);
      if (nl < 0) {
        this.keep(text);
        return events;
      }
      if (this.pendingChars + nl > this.maxLine + 1) return this.fail("line", this.maxLine, events);
      this.pending.push(text.slice(0, nl));
      let line = this.pending.join("");
      this.pending = [];
      this.pendingChars = 0;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.line(line, events);
      if (this.error) return events;
      start = nl + 1;
    }
    for (;;) {
      let nl: number;
      // The usual event, whole and alone: "data: <payload>\n\n" with no event in progress. It is
      // taken in one slice; anything else (\r\n, several data lines, fields, comments) goes
      // line by line below, reusing the line end found here.
      if (this.dataLines.length === 0 && this.eventName === null && text.startsWith("data: ", start)) {
        nl = this.find(text, start + 6);
        if (nl < 0) break;
        if (text.charCodeAt(nl + 1) === LF && text.charCodeAt(nl - 1) !== CR && nl - start <= this.maxLine) {
          const data = text.slice(start + 6, nl);
          if (data.length > this.maxEvent) return this.fail("event", this.maxEvent, events);
          events.push({ event: null, data });
          this.scanned++;
          start = nl + 2;
          continue;
        }
      } else {
        nl = this.find(text, start);
        if (nl < 0) break;
      }
      let line = text.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.length > this.maxLine) return this.fail("line", this.maxLine, events);
      this.line(line, events);
      if (this.error) return events;
    }
    if (start < text.length) this.keep(start === 0 ? text : text.slice(start));
    return events;
  }

  /** Flushes a final event that was not followed by a blank line. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.error) return events;
    if (this.pending.length > 0) {
      let line = this.pending.join("");
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.pending = [];
      this.pendingChars = 0;
      this.line(line, events);
      if (this.error) return events;
    }
    this.line("", events);
    return events;
  }

  /** The first line end in `text` at or after `from` (-1: none), counting what was searched. */
  private find(text: string, from: number): number {
    const nl = text.indexOf("\n", from);
    this.scanned += (nl < 0 ? text.length : nl + 1) - from;
    return nl;
  }

  /** Keeps a piece of the unfinished line (searched already), unless the line grew too long. */
  private keep(piece: string): void {
    if (piece === "") return;
    this.pendingChars += piece.length;
    // One character of slack for a "\r" whose "\n" has not arrived yet.
    if (this.pendingChars > this.maxLine + 1) {
      this.fail("line", this.maxLine, []);
      return;
    }
    this.pending.push(piece);
  }

  private fail(bound: "line" | "event", limit: number, events: SseEvent[]): SseEvent[] {
    this.error = new SseLimitExceeded(bound, limit);
    this.pending = [];
    this.pendingChars = 0;
    this.dataLines = [];
    this.eventName = null;
    return events;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.dataLines.length) out.push({ event: this.eventName, data: this.dataLines.join("\n") });
      this.dataLines = [];
      this.eventChars = 0;
      this.eventName = null;
      return;
    }
    if (line.charCodeAt(0) === 58 /* ":" */) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data" && field !== "event") return;
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    // Each data line after the first adds its "\n" to the event.
    this.eventChars += value.length + (field === "data" && this.dataLines.length > 0 ? 1 : 0);
    if (this.eventChars > this.maxEvent) {
      this.fail("event", this.maxEvent, out);
      return;
    }
    if (field === "data") this.dataLines.push(value);
    else this.eventName = value;
  }
}

// Frames as text, for the steps of a stream that are not relayed chunks (a relay's chunks go
// through SseFrames, sse-frames.ts).

/** `data: <json>\n\n` */
export function sseData(payload: unknown): string {
  return `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`;
}

/** `event: <name>\ndata: <json>\n\n` — Anthropic's SDK dispatches on the event name. */
export function sseEvent(name: string, payload: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** Named events, framed and joined: what one step of a translated stream sends. */
export function sseEvents(events: { event: string; data: unknown }[]): string {
  let text = "";
  for (const e of events) text += sseEvent(e.event, e.data);
  return text;
}

/** A comment line: keeps idle connections open without producing an event. */
export function sseComment(text = "keep-alive"): string {
  return `: ${text}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};
