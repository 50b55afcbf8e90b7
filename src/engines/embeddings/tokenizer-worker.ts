/**
 * A tokenizer thread for embeddings (see tokenizer-pool.ts): it tokenises requests' texts and
 * writes their vectors' JSON text, the two per-request jobs that would otherwise hold the event
 * loop at a GPU's pace for large requests (EmbeddingGemma's tokenizer: ~25 µs per new 150-character
 * text; 768 floats as JSON: ~25 µs). Protocol:
 *   → { type: "load", dir }                       ← { type: "loaded" } | { type: "failed", message }
 *   → { type: "encode", id, texts, inputType? }   ← { type: "encoded", id, ids, lengths } | { type: "error", id, message }
 *   → { type: "write", id, vectors, encoding }    ← { type: "written", id, texts } | { type: "error", id, message }
 * `ids` holds every sequence (BOS, task prompt + text, EOS) end to end, `lengths` their lengths;
 * both buffers are transferred, not copied, as are the vectors sent in.
 */
import { loadTokenizer, type EmbeddingTokenizer } from "./tokenizer";
import type { InputType } from "./prompts";
import { encodeEmbedding, type RowEncoding } from "./vectors";

declare const self: Worker;

let tokenizer: EmbeddingTokenizer | null = null;

self.onmessage = (event: MessageEvent) => {
  const m = event.data as { type: string; id?: number; dir?: string; texts?: string[]; inputType?: InputType; vectors?: Float32Array[]; encoding?: RowEncoding };
  try {
    if (m.type === "load") {
      tokenizer = loadTokenizer(m.dir!);
      self.postMessage({ type: "loaded" });
    } else if (m.type === "encode") {
      const seqs = m.texts!.map((t) => tokenizer!.encodeText(t, m.inputType));
      const lengths = Int32Array.from(seqs, (s) => s.length);
      const ids = new Int32Array(lengths.reduce((n, l) => n + l, 0));
      let at = 0;
      for (const s of seqs) {
        ids.set(s, at);
        at += s.length;
      }
      self.postMessage({ type: "encoded", id: m.id, ids, lengths }, [ids.buffer, lengths.buffer]);
    } else if (m.type === "write") {
      self.postMessage({ type: "written", id: m.id, texts: m.vectors!.map((v) => encodeEmbedding(v, m.encoding!)) });
    }
  } catch (e) {
    const message = String((e as Error)?.message ?? e).slice(0, 500);
    self.postMessage(m.type === "load" ? { type: "failed", message } : { type: "error", id: m.id, message });
  }
};
