/**
 * The inference worker thread: owns one ONNX Runtime session, so a run (ORT's Node binding runs
 * synchronously on the calling thread) blocks only this thread, never the HTTP server's event
 * loop. Used by every in-process engine through onnx-worker-client.ts. Protocol:
 *   → { type: "load", modelPath, provider, tuning }   ← { type: "loaded", meta } | { type: "failed", message }
 *   → { type: "run", id, feeds, outputs }       ← { type: "result", id, outputs } | { type: "error", id, message }
 *   → { type: "close" }                         ← { type: "closed" }
 * Output buffers are transferred back, not copied.
 */
import { createSession, type CreatedSession, type SessionTuning } from "./onnx-session";
import { runSession, sessionMeta, type TensorData } from "./onnx-runner";

declare const self: Worker;

let created: CreatedSession | null = null;

/** Buffers that can be moved: each output's own, whole buffer (else it is copied first). */
function transferable(outputs: Record<string, TensorData>): ArrayBuffer[] {
  const list: ArrayBuffer[] = [];
  for (const t of Object.values(outputs)) {
    if (t.data.byteOffset !== 0 || t.data.byteLength !== t.data.buffer.byteLength || list.includes(t.data.buffer as ArrayBuffer)) t.data = t.data.slice();
    list.push(t.data.buffer as ArrayBuffer);
  }
  return list;
}

self.onmessage = async (event: MessageEvent) => {
  const m = event.data as { type: string; id?: number; modelPath?: string; provider?: "cpu" | "cuda"; tuning?: SessionTuning; feeds?: Record<string, TensorData>; outputs?: string[] };
  try {
    if (m.type === "load") {
      created = await createSession(m.modelPath!, m.provider ?? "cpu", m.tuning ?? {});
      self.postMessage({ type: "loaded", meta: sessionMeta(created) });
    } else if (m.type === "run") {
      const outputs = await runSession(created!, m.feeds!, m.outputs!);
      self.postMessage({ type: "result", id: m.id, outputs }, transferable(outputs));
    } else if (m.type === "close") {
      await created?.session.release();
      created = null;
      self.postMessage({ type: "closed" });
    }
  } catch (e) {
    const message = String((e as Error)?.message ?? e).slice(0, 500);
    self.postMessage(m.type === "load" ? { type: "failed", message } : { type: "error", id: m.id, message });
  }
};
