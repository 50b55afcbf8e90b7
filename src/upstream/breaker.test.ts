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
