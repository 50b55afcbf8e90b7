/**
 * Drives an ONNX session that lives in a worker thread (onnx-worker.ts), so the event loop stays
 * free while a model runs. Runs are matched to their replies by id. If the worker dies, every
 * pending and later run fails (the request answers 5xx, unbilled).
 */
import type { OnnxRunner, SessionMeta, TensorData } from "./onnx-runner";
import type { SessionTuning } from "./onnx-session";

/** The worker started but the model did not load in it. */
export class ModelLoadError extends Error {}

type Reply =
  | { type: "loaded"; meta: SessionMeta }
  | { type: "failed"; message: string }
  | { type: "result"; id: number; outputs: Record<string, TensorData> }
  | { type: "error"; id: number; message: string }
  | { type: "closed" };

/**
 * Where the worker's code is. From source it is the .ts file beside this one. In the compiled
 * binary it is an extra entry point of `bun build --compile` (build.ts), addressed relative to the
 * bundle's root, which is src/ or the repository depending on the entry points: both are tried.
 */
export function workerCandidates(): string[] {
  return import.meta.url.includes("$bunfs")
    ? ["./engines/onnx-worker.ts", "./src/engines/onnx-worker.ts"]
    : [new URL("./onnx-worker.ts", import.meta.url).href];
}

export class WorkerSession implements OnnxRunner {
  readonly thread = "worker" as const;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(o: Record<string, TensorData>): void; reject(e: Error): void }>();
  private dead: Error | null = null;
  private closing = false;
  private restarting: Promise<void> | null = null;
  private onClosed: (() => void) | null = null;

  private constructor(
    private worker: Worker,
    readonly meta: SessionMeta,
    private readonly spec: string,
    private readonly modelPath: string,
    private readonly provider: "cpu" | "cuda",
    private readonly tuning: SessionTuning,
  ) {
    this.attach(worker);
  }

  private attach(worker: Worker): void {
    this.worker = worker;
    worker.onmessage = (e: MessageEvent<Reply>) => this.receive(e.data);
    worker.onerror = (e) => this.fail(new Error(`inference worker crashed: ${e.message}`));
    // A worker can also end without an error event; its runs must not wait forever.
    worker.addEventListener("close", () => {
      if (!this.closing) this.fail(new Error("inference worker exited"));
    });
  }

  /** Starts the worker and loads the model in it; rejects if either fails. */
  static async load(modelPath: string, provider: "cpu" | "cuda", tuning: SessionTuning = {}): Promise<WorkerSession> {
    let last: unknown = null;
    for (const spec of workerCandidates()) {
      try {
        const { worker, meta } = await WorkerSession.start(spec, modelPath, provider, tuning);
        return new WorkerSession(worker, meta, spec, modelPath, provider, tuning);
      } catch (e) {
        last = e;
        // A model that cannot load fails the same way in every worker: do not try the others.
        if (e instanceof ModelLoadError) throw e;
      }
    }
    throw last;
  }

  private static start(spec: string, modelPath: string, provider: "cpu" | "cuda", tuning: SessionTuning): Promise<{ worker: Worker; meta: SessionMeta }> {
    const worker = new Worker(spec);
    return new Promise((resolve, reject) => {
      worker.onerror = (e) => {
        worker.terminate();
        reject(new Error(`inference worker failed to start: ${e.message}`));
      };
      worker.onmessage = (e: MessageEvent<Reply>) => {
        if (e.data.type === "loaded") return resolve({ worker, meta: e.data.meta });
        worker.terminate();
        reject(e.data.type === "failed" ? new ModelLoadError(e.data.message) : new Error("inference worker answered out of turn"));
      };
      worker.postMessage({ type: "load", modelPath, provider, tuning });
    });
  }

  /**
   * After a crash the runs in flight have failed (those requests answer 5xx, unbilled); the next
   * run starts a fresh worker with the same model, so one crash does not take the model down.
   */
  private restart(): Promise<void> {
    this.restarting ??= WorkerSession.start(this.spec, this.modelPath, this.provider, this.tuning)
      .then(({ worker }) => {
        this.attach(worker);
        this.dead = null;
      })
      .finally(() => {
        this.restarting = null;
      });
    return this.restarting;
  }

  private receive(r: Reply): void {
    if (r.type === "closed") return this.onClosed?.();
    if (r.type !== "result" && r.type !== "error") return;
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (r.type === "result") p.resolve(r.outputs);
    else p.reject(new Error(r.message));
  }

  private fail(err: Error): void {
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  async run(feeds: Record<string, TensorData>, outputs: readonly string[], transfer: ArrayBuffer[] = []): Promise<Record<string, TensorData>> {
    if (this.closing) throw new Error("model closed");
    if (this.dead) await this.restart();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ type: "run", id, feeds, outputs: [...outputs] }, transfer);
    });
  }

  async release(): Promise<void> {
    this.closing = true;
    if (!this.dead) {
      await new Promise<void>((resolve) => {
        this.onClosed = resolve;
        this.worker.postMessage({ type: "close" });
        setTimeout(resolve, 2_000).unref?.();
      });
    }
    this.fail(new Error("model closed"));
    this.worker.terminate();
  }
}
