/**
 * A running Switchyard over the deterministic engine upstream, for probing it with outside
 * clients (llmprobe, an SDK in another language) by hand:
 *   npx bun test/support/engine-stack.ts      → prints {"base": …, "key": …, "model": …}, Ctrl-C stops
 *   npx llmprobe <base>/v1 -k <key> -m glm-4.6 --full --no-bench
 */
import { startHarness } from "./harness";
import { startEngineUpstream } from "./engine-upstream";

const engine = startEngineUpstream();
const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: engine.url });
const acct = await h.account(1_000);
console.log(JSON.stringify({ base: h.base, key: acct.key, model: "glm-4.6" }));
const stop = async () => {
  await h.stop();
  engine.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
