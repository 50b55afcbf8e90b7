/**
 * Rate of dashboard sign-ins, successful ones included (docs/dashboard.md): per client address,
 * counted before the key or token is checked, and per key (the admin token counting as one key),
 * counted once it is known to be right. A key holder cannot mint sessions faster than its own
 * per-key rate, and one address cannot sign in with many keys faster than its per-address rate.
 *
 * Each is a token bucket of `perMinute` sign-ins refilling one every 60 s / `perMinute` — the same
 * bucket as the wrong-credential throttle (auth-throttle.ts), where every sign-in spends one.
 * In memory, per instance, like the sessions themselves.
 */
import { AuthThrottle, type ThrottleCheck } from "./auth-throttle";

export interface SignInRates {
  keyPerMinute: number;
  addressPerMinute: number;
}

const bucket = (perMinute: number, now: () => number) =>
  new AuthThrottle({ burst: perMinute, refillMs: Math.ceil(60_000 / perMinute), maxSources: 10_000 }, now);

export class SignInLimit {
  private readonly perKey: AuthThrottle;
  private readonly perAddress: AuthThrottle;

  constructor(rates: SignInRates, now: () => number = Date.now) {
    this.perKey = bucket(rates.keyPerMinute, now);
    this.perAddress = bucket(rates.addressPerMinute, now);
  }

  /** One sign-in attempt from `address`, before its credential is checked. */
  fromAddress(address: string): ThrottleCheck {
    return take(this.perAddress, address);
  }

  /** One sign-in with the key `keyId` ("operator" for the admin token), once it checked out. */
  withKey(keyId: string): ThrottleCheck {
    return take(this.perKey, keyId);
  }
}

function take(b: AuthThrottle, source: string): ThrottleCheck {
  const gate = b.check(source);
  if (gate.ok) b.failure(source); // spends one from the bucket
  return gate;
}
