/**
 * A running Switchyard over the deterministic engine upstream, for probing it with outside
 * clients (llmprobe, an SDK in another language) by hand:
 *   npx bun test/support/engine-stack.ts      → prints {"base": …, "key": …, "model": …}, Ctrl-C stops
 *   npx llmprobe <base>/v1 -k <key> -m glm-4.6 --full --no-bench
 * `embedding-300m` is served too, by the tiny test model with EmbeddingGemma's signature (its
 * vectors mean nothing; its shapes, tokenizer and billing are the real code paths).
 */
import { rmSync } from "node:fs";
import { startHarness } from "./harness";
import { startEngineUpstream } from "./engine-upstream";
import { tempModelsDir } from "./embedding-fixture";

const engine = startEngineUpstream();
const modelsDir = tempModelsDir();
const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: engine.url, SWITCHYARD_MODELS_DIR: modelsDir });
const acct = await h.account(1_000);
console.log(JSON.stringify({ base: h.base, key: acct.key, model: "glm-4.6", embeddingModel: "embedding-300m" }));
const stop = async () => {
  await h.stop();
  engine.stop();
  rmSync(modelsDir, { recursive: true, force: true });
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
