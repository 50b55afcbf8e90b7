/**
 * The inference worker thread: owns one ONNX Runtime session, so a run (ORT's Node binding runs
 * synchronously on the calling thread) blocks only this thread, never the HTTP server's event
 * loop. Used by every in-process engine through onnx-worker-client.ts. Protocol:
 *   → { type: "load", modelPath, provider, tuning }   ← { type: "loaded", meta } | { type: "failed", message }
 *   → { type: "run", id, feeds, outputs, encode? } ← { type: "result", id, outputs, encoded? } | { type: "error", id, message }
 *   → { type: "close" }                         ← { type: "closed" }
 * Output buffers are transferred back, not copied. With `encode` ({ output, rows }), each row r of
 * that [batch, width] output for which rows[r] is set comes back as the JSON text of its
 * embedding (embeddings/vectors.ts: truncated, renormalised, base64 or floats), so per-request
 * output work is done here and not on the event loop; the tensor itself then comes back only when
 * some row asked for no encoding.
 */
import { createSession, type CreatedSession, type SessionTuning } from "./onnx-session";
import { encodeRows, runSession, sessionMeta, type EncodeSpec, type TensorData } from "./onnx-runner";

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
  const m = event.data as { type: string; id?: number; modelPath?: string; provider?: "cpu" | "cuda"; tuning?: SessionTuning; feeds?: Record<string, TensorData>; outputs?: string[]; encode?: EncodeSpec };
  try {
    if (m.type === "load") {
      created = await createSession(m.modelPath!, m.provider ?? "cpu", m.tuning ?? {});
      self.postMessage({ type: "loaded", meta: sessionMeta(created) });
    } else if (m.type === "run") {
      let outputs = await runSession(created!, m.feeds!, m.outputs!);
      if (m.encode) {
        const encoded = encodeRows(outputs, m.encode);
        if (m.encode.rows.every((r) => r !== null)) outputs = {};
        self.postMessage({ type: "result", id: m.id, outputs, encoded }, transferable(outputs));
      } else self.postMessage({ type: "result", id: m.id, outputs }, transferable(outputs));
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
