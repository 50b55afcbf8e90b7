import { afterAll, expect, test } from "bun:test";
import { existsSync, readdirSync, rmSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { tempModelsDir } from "../../test/support/embedding-fixture";
import { createSession, ortVersion } from "./onnx-session";
import { runSession, type TensorData } from "./onnx-runner";
import { loadOrt } from "./onnx-runtime";
import { ensureOptimisedGraph, optimisedName } from "./optimised-graph";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A fresh copy of the tiny embedding model (with layers and a dense head, so there is something to fuse). */
function model(): { dir: string; path: string } {
  const modelsDir = tempModelsDir({ layers: 2, denseHead: 64 });
  dirs.push(modelsDir);
  const dir = join(modelsDir, "embedding-300m", "onnx");
  return { dir, path: join(dir, "model.onnx") };
}

const feeds = (): Record<string, TensorData> => {
  const ids = [2, 10, 11, 12, 13, 14, 1, 0];
  const n = ids.length;
  return {
    input_ids: { type: "int64", data: BigInt64Array.from([...ids, ...ids.map((x, i) => (i < 4 ? x : 0))], BigInt), dims: [2, n] },
    attention_mask: { type: "int64", data: BigInt64Array.from([...ids.map((x) => (x ? 1 : 0)), ...ids.map((_, i) => (i < 4 ? 1 : 0))], BigInt), dims: [2, n] },
  };
};

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

const opt = (dir: string) => readdirSync(dir).filter((f) => f.includes(".opt."));

test("the optimised graph is made on the first load, reused on the next, and answers like the plain graph", async () => {
  const { dir, path } = model();
  const plain = await createSession(path, "cpu");
  expect(plain.graph).toBeUndefined();
  expect(opt(dir)).toEqual([]);

  const first = await createSession(path, "cpu", { optimisedGraph: true });
  expect(first.graph).toBe("made");
  const name = optimisedName(path, "cpu", ortVersion(first.ort));
  expect(existsSync(join(dir, name))).toBe(true);
  const madeAt = statSync(join(dir, name)).mtimeMs;

  const second = await createSession(path, "cpu", { optimisedGraph: true });
  expect(second.graph).toBe("reused");
  expect(statSync(join(dir, name)).mtimeMs).toBe(madeAt);
  // No temporary folder is left behind.
  expect(readdirSync(dir).filter((f) => f.startsWith(".opt-"))).toEqual([]);

  const a = (await runSession(plain, feeds(), ["sentence_embedding"])).sentence_embedding!;
  const b = (await runSession(second, feeds(), ["sentence_embedding"])).sentence_embedding!;
  expect(b.dims).toEqual(a.dims);
  const d = a.dims[1]!;
  for (let r = 0; r < a.dims[0]!; r++) {
    const row = (t: TensorData) => (t.data as Float32Array).subarray(r * d, (r + 1) * d);
    expect(cosine(row(a), row(b))).toBeGreaterThanOrEqual(0.9999);
  }
  await Promise.all([plain, first, second].map((s) => s.session.release()));
});

test("on a provider the tuning keeps plain, the plain graph is loaded and no optimised graph is made", async () => {
  const { dir, path } = model();
  const cpu = await createSession(path, "cpu", { optimisedGraph: true, plainGraphOn: ["cpu"] });
  expect(cpu.graph).toBe("plain graph on cpu (it runs faster there)");
  expect(opt(dir)).toEqual([]);
  // Another provider's exception leaves this one's optimised graph as before.
  const other = await createSession(path, "cpu", { optimisedGraph: true, plainGraphOn: ["cuda"] });
  expect(other.graph).toBe("made");
  await Promise.all([cpu, other].map((s) => s.session.release()));
});

test("a new ONNX Runtime version makes a new graph and deletes the old version's", async () => {
  const { dir, path } = model();
  const ort = await loadOrt();
  const create = (p: string, o: object) => ort.InferenceSession.create(p, o);
  const base = { executionProviders: ["cpu"] };
  const old = await ensureOptimisedGraph(path, "cpu", "0.0.1", base, create);
  expect(old.note).toBe("made");
  expect(opt(dir).some((f) => f.startsWith(optimisedName(path, "cpu", "0.0.1")))).toBe(true);
  expect((await ensureOptimisedGraph(path, "cpu", "0.0.1", base, create)).note).toBe("reused");

  const now = await ensureOptimisedGraph(path, "cpu", "0.0.2", base, create);
  expect(now.note).toBe("made");
  expect(now.path).toBe(join(dir, optimisedName(path, "cpu", "0.0.2")));
  // Only the current version's files stay (graph, and its weights file when ORT wrote one).
  expect(opt(dir).every((f) => f.startsWith(optimisedName(path, "cpu", "0.0.2")))).toBe(true);
});

test("a model replaced after its graph was made gets a new graph", async () => {
  const { path } = model();
  const ort = await loadOrt();
  const create = (p: string, o: object) => ort.InferenceSession.create(p, o);
  const g = await ensureOptimisedGraph(path, "cpu", "9.9.9", { executionProviders: ["cpu"] }, create);
  expect(g.note).toBe("made");
  const later = new Date(statSync(g.path).mtimeMs + 60_000);
  utimesSync(path, later, later);
  expect((await ensureOptimisedGraph(path, "cpu", "9.9.9", { executionProviders: ["cpu"] }, create)).note).toBe("made");
});

test("when the graph cannot be saved the plain model is used, with the reason, and nothing is left behind", async () => {
  const { dir, path } = model();
  const g = await ensureOptimisedGraph(path, "cpu", "1.0.0", {}, async () => {
    throw new Error("disk full");
  });
  expect(g).toEqual({ path, optimised: false, note: "optimised graph not saved (disk full); optimising in memory" });
  expect(readdirSync(dir).filter((f) => f.startsWith(".opt") || f.includes(".opt."))).toEqual([]);
});
