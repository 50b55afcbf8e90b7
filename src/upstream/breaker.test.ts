import { describe, expect, test } from "bun:test";
import { RouteHealth } from "./breaker";

describe("RouteHealth (circuit breaker)", () => {
  const policy = { failures: 3, cooldownMs: 1000 };

  test("opens after N consecutive failures, not before", () => {
    const h = new RouteHealth(policy);
    h.failure(0);
    h.failure(0);
    expect(h.state(0)).toBe("closed");
    h.failure(0);
    expect(h.state(0)).toBe("open");
    expect(h.tryAcquire(500)).toBe(false);
  });

  test("a success in between resets the count", () => {
    const h = new RouteHealth(policy);
    h.failure(0);
    h.failure(0);
    h.success();
    h.failure(0);
    h.failure(0);
    expect(h.state(0)).toBe("closed");
  });

  test("after the cool-down exactly one probe goes through; its success closes the breaker", () => {
    const h = new RouteHealth(policy);
    for (let i = 0; i < 3; i++) h.failure(0);
    expect(h.state(1000)).toBe("half-open");
    expect(h.available(1000)).toBe(true);
    expect(h.tryAcquire(1000)).toBe(true);
    expect(h.available(1000)).toBe(false);
    expect(h.tryAcquire(1000)).toBe(false); // a second request does not probe concurrently
    h.success();
    expect(h.state(1001)).toBe("closed");
    expect(h.tryAcquire(1001)).toBe(true);
  });

  test("a failed probe opens it for another cool-down", () => {
    const h = new RouteHealth(policy);
    for (let i = 0; i < 3; i++) h.failure(0);
    expect(h.tryAcquire(1000)).toBe(true);
    h.failure(1000);
    expect(h.state(1500)).toBe("open");
    expect(h.state(2000)).toBe("half-open");
  });

  test("a probe that ends neutrally (client left) frees the probe slot", () => {
    const h = new RouteHealth(policy);
    for (let i = 0; i < 3; i++) h.failure(0);
    expect(h.tryAcquire(1000)).toBe(true);
    h.neutral();
    expect(h.tryAcquire(1000)).toBe(true);
  });
});

describe("one tenant's failures do not open it", () => {
  const policy = { failures: 3, cooldownMs: 1000 };
  const fivexx = (account: string) => ({ answer: true, account });

  test("5xx answers to one account never open it, however many", () => {
    const h = new RouteHealth(policy);
    for (let i = 0; i < 50; i++) h.failure(i, fivexx("acct_a"));
    expect(h.state(50)).toBe("closed");
  });

  test("5xx answers to two accounts open it after the usual run", () => {
    const h = new RouteHealth(policy);
    h.failure(0, fivexx("acct_a"));
    h.failure(0, fivexx("acct_a"));
    expect(h.state(0)).toBe("closed");
    h.failure(0, fivexx("acct_b"));
    expect(h.state(0)).toBe("open");
  });

  test("route faults (no connection, timeouts) open it on their own, whatever else is in the run", () => {
    const h = new RouteHealth(policy);
    h.failure(0, fivexx("acct_a"));
    h.failure(0);
    h.failure(0);
    expect(h.state(0)).toBe("closed");
    h.failure(0);
    expect(h.state(0)).toBe("open");
  });

  test("a probe failing with a 5xx for one account leaves the route half-open; another account's, or a route fault, re-opens it", () => {
    const h = new RouteHealth(policy);
    for (let i = 0; i < 3; i++) h.failure(0);
    expect(h.tryAcquire(1000)).toBe(true);
    h.failure(1000, fivexx("acct_a"));
    expect(h.state(1000)).toBe("half-open");
    expect(h.tryAcquire(1000)).toBe(true);
    h.failure(1000, fivexx("acct_a"));
    expect(h.state(1000)).toBe("half-open");
    expect(h.tryAcquire(1000)).toBe(true);
    h.failure(1000, fivexx("acct_b"));
    expect(h.state(1500)).toBe("open");
    expect(h.tryAcquire(2000)).toBe(true);
    h.failure(2000);
    expect(h.state(2500)).toBe("open");
  });
});
