/**
 * The ledger's public types (billing/ledger.ts, which re-exports them): the options it is built
 * with, and the records its observers hear (clamped charges, holds changing state).
 */

export interface LedgerOptions {
  /** After a store failure, new holds are refused without a write for this long (ms). */
  probeIntervalMs?: number;
  /** A hold pending longer than this (seconds) is voided by expireHolds() (see hold-expiry.ts). */
  holdExpirySeconds?: number;
  /** The clock holds are dated and expired by, and key limit periods read from (ms); tests and the randomized checker move it. */
  now?: () => number;
}

/** A clamped charge, for the metric. */
export interface ClampRecord {
  requestId: string;
  endpoint: string;
  model: string;
  reported: number;
  held: number;
}

/** A hold's change of state, for observers (metrics, tests): taken, charged, or released unposted. */
export interface HoldEvent {
  requestId: string;
  accountId: string;
  amount: number;
  state: "pending" | "posted" | "voided";
}
