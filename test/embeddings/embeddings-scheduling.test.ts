/**
 * The scheduler behind POST /v1/embeddings, observed over real HTTP: requests from many clients
 * share batches (seen in the metrics), a full queue answers 503 with Retry-After, a client that
 * disconnects takes its queued work out of the queue, and none of these bill anything.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { startHarness, type Harness } from "../support/harness";
import { tempModelsDir } from "../support/embedding-fixture";
import { ledgerState } from "../support/ledger-state";
import { installGatedEngine, until, type GatedEngine } from "./gated-engine";

let h: Harness;
let modelsDir: string;

function post(key: string, input: unknown, signal?: AbortSignal) {
  return fetch(h.base + "/v1/embeddings", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "embedding-300m", input }),
    signal,
  });
}

/** A scheduler series for embedding-300m, read from GET /metrics (as an operator would). */
async function metric(name: string, extraLabel = ""): Promise<number> {
  const text = await (await fetch(h.base + "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes('scheduler="embedding-300m"') && l.includes(extraLabel));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

beforeAll(async () => {
  modelsDir = tempModelsDir();
  // Generous per-account limits: these tests send many requests at once on purpose.
  h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir, SWITCHYARD_CONCURRENCY_LIMIT: "1000", SWITCHYARD_RATE_LIMIT_RPM: "100000" });
});
afterAll(async () => {
  await h.stop();
  rmSync(modelsDir, { recursive: true, force: true });
});

describe("embeddings scheduling", () => {
  let g: GatedEngine;
  beforeAll(async () => {
    g = await installGatedEngine(h, modelsDir, { maxQueue: 8, maxBatchSize: 32 });
  });

  test("requests that arrive while a batch runs are run together in one batch", async () => {
    const { key } = await h.account(10);
    const batchesBefore = await metric("switchyard_scheduler_batches_total");
    const sizeSumBefore = await metric("switchyard_scheduler_batch_size_sum");
    g.hold();
    const first = post(key, "hello");
    await until(() => g.runs.length > 0 && g.engine.queued === 0);
    const runsBefore = g.runs.length;
    const rest = Array.from({ length: 6 }, (_, i) => post(key, `the cat ${i}`));
    await until(() => g.engine.queued === 6);
    g.release();
    const all = await Promise.all([first, ...rest]);
    expect(all.map((r) => r.status)).toEqual(Array(7).fill(200));
    // One batch for the first request, one for the six that waited.
    expect(g.runs.slice(runsBefore)).toEqual([6]);
    expect((await metric("switchyard_scheduler_batches_total")) - batchesBefore).toBe(2);
    expect((await metric("switchyard_scheduler_batch_size_sum")) - sizeSumBefore).toBe(7);
  });

  test("a full queue answers 503 with Retry-After and bills nothing; queued work still completes", async () => {
    const a = await h.account(10);
    const b = await h.account(10);
    g.hold();
    const running = post(a.key, "hello");
    await until(() => g.engine.queued === 0 && g.runs.length > 0);
    const queued = post(a.key, Array(6).fill("the cat"));
    await until(() => g.engine.queued === 6);
    // 6 queued + 3 more > 8: refused whole, none of its entries queued.
    const refused = await post(b.key, ["a", "b", "c"]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as any).error.code).toBe("model_unavailable");
    expect(g.engine.queued).toBe(6);
    const st = ledgerState(h, b.id);
    expect([st.charges, st.reserved, st.pendingHolds]).toEqual([0, 0, 0]);
    g.release();
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
    expect(ledgerState(h, a.id).charges).toBe(2);
  });

  test("a client that disconnects leaves the queue and pays nothing", async () => {
    const { key, id } = await h.account(10);
    const other = await h.account(10);
    const abortedBefore = await metric("switchyard_scheduler_rejected_total", 'reason="aborted"');
    g.hold();
    const running = post(other.key, "hello");
    await until(() => g.engine.queued === 0 && g.runs.length > 0);
    const ac = new AbortController();
    const gone = post(key, ["the cat", "a dog", "hello world"], ac.signal).catch((e) => e);
    await until(() => g.engine.queued === 3);
    const runsBefore = g.runs.length;
    ac.abort();
    expect(((await gone) as Error).name).toBe("AbortError");
    await until(() => g.engine.queued === 0);
    const abortedAfter = await metric("switchyard_scheduler_rejected_total", 'reason="aborted"');
    expect(abortedAfter - abortedBefore).toBe(3);
    g.release();
    expect((await running).status).toBe(200);
    // The cancelled entries never reached the model.
    expect(g.runs.length).toBe(runsBefore);
    await until(() => ledgerState(h, id).pendingHolds === 0);
    const st = ledgerState(h, id);
    expect([st.charges, st.reserved]).toEqual([0, 0]);
  });
});
