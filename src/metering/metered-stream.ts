/**
 * One metered byte stream, for every paid call that streams (chat in any protocol, speech): the
 * source writes bytes for the client, each write carrying the units of the metered quantity it
 * delivers (characters of text, characters of speech input), and this module decides — once the
 * source has ended, in order, in one finally — what the call is charged:
 *
 *   completed    the source's usage (clamped to the hold); the closing bytes go out only once
 *                the charge is durable, so a client that saw the end was charged;
 *   client gone  (the connection closed, or the client stopped reading and was cut off) the usage
 *                of what the client's connection took — not what was still queued for it — or
 *                nothing when it took none;
 *   failed       nothing: the hold is released, and the client gets the source's error frames
 *                (or a cut-off transfer), which say whether it was billed;
 *   charge fails never charged: the stream ends as failed (told "not billed" only when the release
 *                is durable), or — for a source whose output is whole already (speech) — complete.
 *
 * Whatever happens, the call is closed (released unless charged) in the finally below, and this
 * function never rejects: bytes already sent end as a complete body or a cut-off transfer.
 */
import { DomainError, chargeNotRecorded } from "../errors";
import type { Log } from "../log";
import type { Consumption, StoredResponseRecord } from "../billing/ledger-store";
import type { MeteredCall } from "./metered-call";

/**
 * Where a stream's bytes go (the HTTP layer's producer stream implements it): a queue with
 * backpressure that knows how many bytes the client's connection has taken.
 */
export interface ByteSink {
  /** Queues bytes; `owned`: a buffer of their own, freed once taken. Never blocks. */
  write(bytes: Uint8Array, owned?: boolean): void;
  /** Resolves once the queue is below its high-water mark (or the stream ended); undefined when it is already. */
  ready(): Promise<void> | undefined;
  readonly closed: boolean;
  /** Bytes the client's connection has taken so far. */
  readonly taken: number;
  /** Ends the response as a failed transfer. */
  abort(): void;
}

/** How a source ended. */
export type StreamEnding =
  | {
      kind: "completed";
      usage: Consumption;
      /** Written in the charge's own transaction (a Responses turn). */
      storedResponse?: StoredResponseRecord;
      /** Sent once the charge is durable (the protocol's final frames, the encoder's last bytes). */
      closing: Uint8Array | null;
    }
  | { kind: "failed"; error: unknown };

/** A paid stream's work: what it writes, and how what was delivered is measured. */
export interface MeteredSource {
  /** Writes the stream through `out` until it ends; resolves with how (rejecting counts as failed). */
  run(out: MeteredOut): Promise<StreamEnding>;
  /**
   * The usage of a client that went away: everything delivered but the last `untaken` units (what
   * its connection never took), or null when nothing was delivered.
   */
  deliveredUsage(untaken: number): Promise<Consumption | null>;
  /** What a client is told of a failure, knowing whether its hold is voided (not billed). */
  failure(error: unknown, voided: boolean): DomainError;
  /** The bytes that end a failed stream, or null to cut the transfer off. */
  failedBytes(error: DomainError): Uint8Array | null;
  /**
   * When the charge of a completed stream cannot be written: true ends the body complete anyway
   * (unbilled: audio already sent is a whole file), false ends it as failed (error frames).
   */
  readonly completesUncharged?: boolean;
}

/**
 * The source's side of the sink: each write records the units it delivers and the byte offset it
 * ends at, until the client's connection takes that offset (so it holds at most the sink's
 * high-water mark's worth of writes, plus one).
 */
export class MeteredOut {
  private written = 0;
  private readonly pending: { end: number; units: number }[] = [];
  private pendingUnits = 0;

  constructor(private readonly sink: ByteSink) {}

  /** Queues `bytes` delivering `units` of the metered quantity. */
  write(bytes: Uint8Array, units = 0, owned = false): void {
    if (bytes.byteLength === 0) return;
    this.sink.write(bytes, owned);
    this.written += bytes.byteLength;
    this.add(this.written, units);
  }

  /** Units read from the source that never reached the sink (it had closed): never delivered. */
  dropped(units: number): void {
    this.add(Infinity, units);
  }

  get closed(): boolean {
    return this.sink.closed;
  }

  /** Bytes written so far. */
  get bytes(): number {
    return this.written;
  }

  /** Waits for the client to take most of what is queued (backpressure); undefined when there is room. */
  ready(): Promise<void> | undefined {
    const room = this.sink.ready();
    if (room) return room.then(() => this.forgetTaken());
    this.forgetTaken();
    return undefined;
  }

  /** Units in writes the client's connection has not taken (all of them once it is gone). */
  untaken(): number {
    this.forgetTaken();
    return this.pendingUnits;
  }

  private add(end: number, units: number): void {
    if (units === 0) return;
    this.pending.push({ end, units });
    this.pendingUnits += units;
  }

  private forgetTaken(): void {
    const taken = this.sink.taken;
    while (this.pending.length > 0 && this.pending[0]!.end <= taken) this.pendingUnits -= this.pending.shift()!.units;
  }
}

/** Runs a started paid stream to its end and decides its charge (see the top of this file). Never rejects. */
export async function runMeteredStream(call: MeteredCall, sink: ByteSink, source: MeteredSource, log: Log): Promise<void> {
  const out = new MeteredOut(sink);
  try {
    let ending: StreamEnding;
    try {
      ending = await source.run(out);
    } catch (error) {
      ending = { kind: "failed", error };
    }

    if (sink.closed) {
      // The client went away (or was cut off): it pays for what its connection took.
      const usage = await source.deliveredUsage(out.untaken());
      if (usage) {
        await call.charge(usage).catch((err) => {
          log.error("charge of a stream whose client left failed; not billed", { request_id: call.requestId, error: String((err as Error)?.message ?? err).slice(0, 300) });
        });
      }
      return;
    }

    if (ending.kind === "failed") {
      end(sink, source, source.failure(ending.error, await call.close()));
      return;
    }

    try {
      await call.charge(ending.usage, ending.storedResponse);
    } catch (err) {
      log.error("stream charge failed; not billed", { request_id: call.requestId, error: String((err as Error)?.message ?? err).slice(0, 300) });
      if (source.completesUncharged) {
        if (ending.closing) sink.write(ending.closing);
        return;
      }
      // The charge released the hold; "not billed" only once that release is durable.
      const told = err instanceof DomainError && err.kind === "unavailable" ? err : chargeNotRecorded(await call.close());
      end(sink, source, told);
      return;
    }
    if (ending.closing) sink.write(ending.closing);
  } catch (err) {
    log.error("metered stream failed", { request_id: call.requestId, error: String((err as Error)?.stack ?? err).slice(0, 500) });
    sink.abort();
  } finally {
    // The one release of a streamed call's hold: a no-op once it was charged.
    await call.close();
  }
}

/** Ends a failed stream: the source's error frames, or a cut-off transfer. */
function end(sink: ByteSink, source: MeteredSource, told: DomainError): void {
  const bytes = source.failedBytes(told);
  if (bytes) sink.write(bytes);
  else sink.abort();
}
