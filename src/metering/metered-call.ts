/**
 * One paid call's money, from hold to charge: the one place where a request — chat completions,
 * Messages, Responses, speech, embeddings — reserves, is charged, or is released. Routes never
 * touch the ledger; they parse, hand the work to one of the two shapes below, and frame the result:
 *
 *   meterWhole   a call whose result is complete before it is returned (a plain chat, embeddings,
 *                a speech file sent whole): reserve → work → charge → value, released in one finally.
 *   openMetered  a call that streams (chat, speech): reserve → start the work (the upstream
 *                accepted, the first audio is ready); the started stream is then run by
 *                runMeteredStream (metered-stream.ts), which charges what was delivered and
 *                releases in its own one finally. A start that fails releases before it throws.
 *
 * Exactly once: a MeteredCall is charged at most once (a repeated charge returns the first) and
 * closed any number of times (the first close releases an uncharged hold; later ones are no-ops).
 * The hold's state machine and the ceiling rule (a charge never exceeds its hold) are billing/hold.ts.
 */
import type { Ledger } from "../billing/ledger";
import type { Hold, HoldSpec, Quote, Settlement } from "../billing/hold";
import type { Consumption, StoredResponseRecord } from "../billing/ledger-store";

/** What a paid call holds and how it is priced, and the tier it is served on. */
export interface CallSpec extends HoldSpec {
  serviceTier: string;
}

/** How a metered call ended, for whoever records it (logs, metrics): charged units, or released. */
export type CallOutcome = { charged: number } | { released: true; voided: boolean };

export class MeteredCall {
  private closing: Promise<boolean> | null = null;
  private settled: Settlement | null = null;

  private constructor(
    private readonly hold: Hold,
    readonly serviceTier: string,
    private readonly onClosed?: (outcome: CallOutcome) => void,
  ) {}

  /** Reserves the call's hold: 402 when the account (or key) cannot cover it, 503 when the ledger cannot write. */
  static async open(ledger: Ledger, spec: CallSpec, onClosed?: (outcome: CallOutcome) => void): Promise<MeteredCall> {
    const hold = await ledger.reserve(spec);
    return new MeteredCall(hold, spec.serviceTier, onClosed);
  }

  get requestId(): string {
    return this.hold.requestId;
  }

  /** What charging `usage` would cost and record (clamped to the hold); nothing is written. */
  quote(usage: Consumption): Quote {
    return this.hold.quote(usage);
  }

  /**
   * Charges `usage` (clamped to the hold) and resolves once the charge is durable; a second call
   * returns the first charge. A `storedResponse` is written in the charge's own transaction.
   */
  async charge(usage: Consumption, storedResponse?: StoredResponseRecord): Promise<Settlement> {
    const settlement = await this.hold.settle({ ...usage, serviceTier: this.serviceTier, storedResponse });
    this.settled = settlement;
    return settlement;
  }

  /**
   * The end of the call, on every path (a finally): releases the hold unless it was charged. Resolves
   * true only when the hold is known voided — the one case in which a client may be told "not
   * billed". Idempotent; never rejects.
   */
  close(): Promise<boolean> {
    this.closing ??= this.hold.release().then((voided) => {
      this.onClosed?.(this.settled ? { charged: this.settled.charged } : { released: true, voided });
      return voided;
    });
    return this.closing;
  }
}

/** What the work of a whole call produced: its usage, and the value to return once it is charged. */
export interface WholeResult<T> {
  usage: Consumption;
  /** A Responses turn written in the charge's own transaction. */
  storedResponse?: StoredResponseRecord;
  value: T;
}

/**
 * A call whose result is complete before it is returned: reserve, run `work` (which may quote),
 * charge what it reports, and release in one finally whatever happened. Nothing is charged when
 * `work` throws; its error is rethrown as it is.
 */
export async function meterWhole<T>(
  ledger: Ledger, spec: CallSpec, work: (call: MeteredCall) => Promise<WholeResult<T>>, onClosed?: (outcome: CallOutcome) => void,
): Promise<{ value: T; settlement: Settlement }> {
  const call = await MeteredCall.open(ledger, spec, onClosed);
  try {
    const result = await work(call);
    const settlement = await call.charge(result.usage, result.storedResponse);
    return { value: result.value, settlement };
  } finally {
    await call.close();
  }
}

/**
 * A streamed call, started: the hold is reserved and `start` has produced the work's stream (an
 * upstream accepted it, the first audio is ready). From here the stream owns the call: run it with
 * runMeteredStream, whose finally releases it. When `start` fails, the hold is released first.
 */
export async function openMetered<S>(
  ledger: Ledger, spec: CallSpec, start: (call: MeteredCall) => Promise<S>, onClosed?: (outcome: CallOutcome) => void,
): Promise<{ call: MeteredCall; stream: S }> {
  const call = await MeteredCall.open(ledger, spec, onClosed);
  try {
    return { call, stream: await start(call) };
  } catch (err) {
    await call.close();
    throw err;
  }
}
