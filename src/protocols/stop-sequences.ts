/**
 * Stop sequences found in the generated text itself. Upstreams are asked to stop on the client's
 * sequences, but not every engine honours them (OpenAI-compatible servers take at most four, some
 * ignore the field) and few say which one matched. So the Messages translators also look for
 * them in the text: the output ends before the first match and reports it as `stop_sequence`.
 * Pure and incremental: a stream's text is scanned chunk by chunk, holding back only a tail
 * that could still grow into a match.
 */

/** OpenAI's limit on `stop`; more sequences than this are matched here only. */
export const UPSTREAM_STOP_LIMIT = 4;

/** The earliest stop sequence in `text` (the longest one where several start at one place). */
export function findStop(text: string, stops: readonly string[]): { index: number; stop: string } | null {
  let best: { index: number; stop: string } | null = null;
  for (const stop of stops) {
    if (stop === "") continue;
    const index = text.indexOf(stop);
    if (index < 0) continue;
    if (!best || index < best.index || (index === best.index && stop.length > best.stop.length)) best = { index, stop };
  }
  return best;
}

/** Scans streamed text; `push` returns what may be sent now, and the stop once one matched. */
export class StopScanner {
  private held = "";
  private readonly longest: number;
  matched: string | null = null;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(0, ...stops.map((s) => s.length));
  }

  get active(): boolean {
    return this.longest > 0;
  }

  push(text: string): string {
    if (this.matched !== null) return "";
    if (!this.active) return text;
    const buffer = this.held + text;
    const hit = findStop(buffer, this.stops);
    if (hit) {
      this.matched = hit.stop;
      this.held = "";
      return buffer.slice(0, hit.index);
    }
    // Keep the longest tail that is a proper prefix of some stop sequence.
    let keep = 0;
    for (let n = Math.min(this.longest - 1, buffer.length); n > 0; n--) {
      const tail = buffer.slice(buffer.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) {
        keep = n;
        break;
      }
    }
    this.held = buffer.slice(buffer.length - keep);
    return buffer.slice(0, buffer.length - keep);
  }

  /** The text held back when the stream ends without a match. */
  flush(): string {
    const rest = this.matched === null ? this.held : "";
    this.held = "";
    return rest;
  }
}
