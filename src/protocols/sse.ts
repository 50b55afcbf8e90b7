/**
 * Server-sent events: an incremental parser for upstream streams and a framer for ours.
 * Pure and allocation-light; the relay hot path runs through here for every chunk.
 */

export interface SseEvent {
  event: string | null;
  data: string;
}

const LF = 10;
const CR = 13;

/** Splits a byte stream into SSE events (handles \n, \r\n, multi-line data, comments). */
export class SseParser {
  private buffer = "";
  private readonly decoder = new TextDecoder();
  private dataLines: string[] = [];
  private eventName: string | null = null;

  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const buffer = this.buffer === "" ? text : this.buffer + text;
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      // The usual event, whole and alone: "data: <payload>\n\n" with no event in progress. It is
      // taken in one slice; anything else (\r\n, several data lines, fields, comments) goes
      // line by line below.
      if (this.dataLines.length === 0 && this.eventName === null && buffer.startsWith("data: ", start)) {
        const end = buffer.indexOf("\n", start + 6);
        if (end < 0) break;
        if (buffer.charCodeAt(end + 1) === LF && buffer.charCodeAt(end - 1) !== CR) {
          events.push({ event: null, data: buffer.slice(start + 6, end) });
          start = end + 2;
          continue;
        }
      }
      const nl = buffer.indexOf("\n", start);
      if (nl < 0) break;
      let line = buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.line(line, events);
    }
    this.buffer = start === buffer.length ? "" : buffer.slice(start);
    return events;
  }

  /** Flushes a final event that was not followed by a blank line. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.buffer) this.line(this.buffer, events);
    this.buffer = "";
    this.line("", events);
    return events;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.dataLines.length) out.push({ event: this.eventName, data: this.dataLines.join("\n") });
      this.dataLines = [];
      this.eventName = null;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.dataLines.push(value);
    else if (field === "event") this.eventName = value;
  }
}

// Frames are text: a relay joins the frames of one upstream read and encodes them once.

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
