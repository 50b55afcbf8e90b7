/**
 * A database error met by this instance's writes, as the stores report it: the one that says this
 * instance was declared dead (SQLSTATE SY001, raised by switchyard_instance_alive) becomes
 * StoreUnavailable, and the registry is told to register again. Shared by the ledger store's
 * grants (lease-grants.ts) and the limiter (limiter.ts).
 */
import { StoreUnavailable } from "../../billing/ledger-store";
import { toStoreError } from "./database";
import type { InstanceIdentity } from "./instances";

/**
 * This instance was declared dead (SQLSTATE SY001): the store cannot take its writes until it
 * registered again, which the registry does at once.
 */
export function instanceError(e: unknown, instance: InstanceIdentity): unknown {
  const err = toStoreError(e);
  if ((err as { errno?: string } | null)?.errno === "SY001") {
    instance.noticeReleased?.();
    return new StoreUnavailable("unreachable", "this instance was released; registering again");
  }
  return err;
}
