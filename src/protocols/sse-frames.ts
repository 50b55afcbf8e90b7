/**
 * The frames of one step of a relayed stream, encoded once into one buffer of their own.
 *
 * The pieces (field names, JSON payloads, line ends) are kept apart and each written straight into
 * the buffer: joined first, they would make a rope, which encoding flattens into one more copy of
 * everything — garbage as large as the step, per open stream, that young collections promote while
 * the relay waits for its client (docs/architecture.md, "Memory per stream"). The buffer is an
 * ArrayBuffer of its own, never a slice of a shared pool.
 */
export class SseFrames {
  private readonly pieces: string[] = [];

  /** `data: <json>\n\n` */
  data(json: string): void {
    this.pieces.push("data: ", json, "\n\n");
  }

  /** `event: <name>\ndata: <json>\n\n` */
  event(name: string, json: string): void {
    this.pieces.push("event: ", name, "\ndata: ", json, "\n\n");
  }

  /** Named events, each framed as `event`. */
  events(events: { event: string; data: unknown }[]): void {
    for (const e of events) this.event(e.event, JSON.stringify(e.data));
  }

  get empty(): boolean {
    return this.pieces.length === 0;
  }

  /** The frames so far as UTF-8 (empty when there are none); this is then empty again. */
  take(): Uint8Array {
    let bytes = 0;
    for (const p of this.pieces) bytes += Buffer.byteLength(p, "utf8");
    const out = Buffer.allocUnsafeSlow(bytes);
    let at = 0;
    for (const p of this.pieces) at += out.write(p, at, "utf8");
    this.pieces.length = 0;
    return out;
  }
}
