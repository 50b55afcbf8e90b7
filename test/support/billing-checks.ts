/** Ledger assertions shared by the SDK end-to-end tests: what a call charged, or that it billed nothing and never reached the upstream. */
import { expect } from "bun:test";
import type { Harness } from "./harness";
import { settled, storeState } from "./ledger-state";

export interface BillingTarget {
  h: Harness;
  accountId: string;
  /** The upstream whose recorded requests `rejected` counts. */
  upstream: { requests: unknown[] };
}

/** `target` is read at call time, so it may name variables a beforeAll fills in. */
export function billingChecks(target: () => BillingTarget) {
  return {
    /** Runs `fn` and returns how many units the balance dropped, after all holds closed. */
    async charged(fn: () => Promise<unknown>): Promise<number> {
      const { h, accountId } = target();
      const before = await storeState(h, accountId);
      await fn();
      const after = await settled(h, accountId);
      expect(after.pendingHolds).toBe(0);
      expect(after.sum - before.sum).toBe(after.balance - before.balance);
      return before.balance - after.balance;
    },
    /** Asserts the request failed, billed nothing and reached the upstream `upstreamCalls` times. */
    async rejected(fn: () => Promise<unknown>, upstreamCalls = 0): Promise<any> {
      const { h, accountId, upstream } = target();
      const before = await storeState(h, accountId);
      const err = await fn().then(() => null, (e) => e);
      expect(err).not.toBeNull();
      expect(await storeState(h, accountId)).toEqual(before);
      expect(upstream.requests.length).toBe(upstreamCalls);
      return err;
    },
  };
}
