import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { tempModelsDir } from "../../test/support/embedding-fixture";
import { WorkerSession } from "./onnx-worker-client";
import type { TensorData } from "./onnx-runner";

const modelsDir = tempModelsDir({ layers: 1 });
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

const feeds = (): Record<string, TensorData> => ({
  input_ids: { type: "int64", data: new BigInt64Array([2n, 10n, 1n]), dims: [1, 3] },
  attention_mask: { type: "int64", data: new BigInt64Array([1n, 1n, 1n]), dims: [1, 3] },
});

test("a worker that exits without an error event fails its runs, and the next run starts a fresh worker", async () => {
  const session = await WorkerSession.load(join(modelsDir, "embedding-300m", "onnx", "model.onnx"), "cpu");
  try {
    const before = await session.run(feeds(), ["sentence_embedding"]);
    // Kill the worker from outside, as a crash in native code would: no error event is raised.
    (session as unknown as { worker: Worker }).worker.terminate();
    // Wait until the session has seen the exit (a busy machine may take a while to deliver it).
    const internals = session as unknown as { dead: Error | null };
    for (let waited = 0; internals.dead === null && waited < 5_000; waited += 10) await Bun.sleep(10);
    expect(internals.dead?.message).toBe("inference worker exited");
    const after = await session.run(feeds(), ["sentence_embedding"]);
    expect([...(after.sentence_embedding!.data as Float32Array)]).toEqual([...(before.sentence_embedding!.data as Float32Array)]);
  } finally {
    await session.release();
  }
});

test("a run in flight when the worker dies is rejected instead of hanging", async () => {
  const session = await WorkerSession.load(join(modelsDir, "embedding-300m", "onnx", "model.onnx"), "cpu");
  try {
    const pending = session.run(feeds(), ["sentence_embedding"]);
    (session as unknown as { worker: Worker }).worker.terminate();
    const outcome = await Promise.race([pending.then(() => "resolved", () => "rejected"), Bun.sleep(3000).then(() => "hung")]);
    expect(outcome).not.toBe("hung");
  } finally {
    await session.release();
  }
});
