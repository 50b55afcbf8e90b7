import { expect, test } from "bun:test";
import { baseSessionOptions } from "./onnx-session";

const sessionConfig = (o: ReturnType<typeof baseSessionOptions>) => (o.extra as { session: Record<string, unknown> }).session;

test("a spinning session spins only while a run lasts: its threads stop when the last run returns", () => {
  expect(sessionConfig(baseSessionOptions({ spinning: true }))).toEqual({ intra_op: { allow_spinning: "1" }, inter_op: { allow_spinning: "1" }, force_spinning_stop: "1" });
});

test("a session without spinning never spins; thread count and optimisation level pass through", () => {
  const o = baseSessionOptions({ intraOpThreads: 3 });
  expect(sessionConfig(o)).toEqual({ intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" }, force_spinning_stop: "1" });
  expect(o.intraOpNumThreads).toBe(3);
  expect(o.graphOptimizationLevel).toBe("all");
  expect(baseSessionOptions({}).intraOpNumThreads).toBeUndefined();
});
