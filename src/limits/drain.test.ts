import { expect, test } from "bun:test";
import { Drain } from "./drain";

test("idle resolves once the last request in flight ends; at once when none is", async () => {
  const d = new Drain();
  expect(await d.idle(60_000)).toBe(true);
  d.begin();
  d.begin();
  const idle = d.idle(60_000);
  d.end();
  expect(d.inFlight).toBe(1);
  d.end();
  expect(await idle).toBe(true);
});

test("idle says false when the grace period runs out with requests still in flight", async () => {
  const d = new Drain();
  d.begin();
  expect(await d.idle(0)).toBe(false);
  expect(d.inFlight).toBe(1);
});

test("cutAll cuts each registered stream once; an unregistered stream is not cut", () => {
  const d = new Drain();
  const cut: string[] = [];
  d.onCut(() => cut.push("a"));
  const unregister = d.onCut(() => cut.push("b"));
  d.onCut(() => cut.push("c"));
  unregister();
  expect(d.openStreams).toBe(2);
  expect(d.cutAll()).toBe(2);
  expect(d.cutAll()).toBe(0);
  expect(cut).toEqual(["a", "c"]);
});

test("stopping is off until beginStopping", () => {
  const d = new Drain();
  expect(d.stopping).toBe(false);
  d.beginStopping();
  expect(d.stopping).toBe(true);
});
