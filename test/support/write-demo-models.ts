/**
 * Writes the demo's tiny models into models/demo/ (`npm run demo:models`), from the same builders
 * the tests use: voice-82m (the tiny Kokoro-signature graph, one voice pack, af_heart) and
 * embedding-300m (the tiny EmbeddingGemma-signature graph and its tokenizer). They are committed,
 * so `switchyard demo` needs no devDependency, and embedded in the binary by src/demo/models.ts.
 * Their output means nothing (a tone, arbitrary vectors); shapes, tokenizers and billing are real.
 * Rerun only when the builders change; the output is deterministic.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { writeTinyKokoro } from "./tiny-kokoro";
import { writeEmbeddingModel } from "./embedding-fixture";

const out = join(import.meta.dir, "..", "..", "models", "demo");
rmSync(out, { recursive: true, force: true });
writeTinyKokoro(out, { voices: ["af_heart"] });
writeEmbeddingModel(out);
console.log(`demo models written to ${out}`);
