/**
 * What an upstream's long model list costs (issue 29.3): a server whose default upstream lists N
 * ids (SWITCHYARD_UPSTREAM_MODELS_MAX raised to N), for growing N. Printed per N: the refresh
 * (fetch, parse, compare), the longest event-loop stall seen while it ran (a 1 ms timer's lag),
 * the first GET /v1/models and /readyz after it (they build the lists), and the median of the
 * next ones (served from what was built). No assertion: figures only.
 *
 *   npx bun test/bench/model-list.bench.ts            # N = 1000, 10000, 30000
 *   BENCH_SIZES=1000,50000 npx bun test/bench/model-list.bench.ts
 */
import { startHarness } from "../support/harness";
import { startFakeUpstream } from "../support/fake-upstream";
import { median } from "./lib/load";

const sizes = (process.env.BENCH_SIZES ?? "1000,10000,30000").split(",").map(Number);
const REPEAT = 20;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** The longest gap between ticks of a 1 ms interval while `fn` runs: how long the loop was blocked. */
async function longestStall(fn: () => Promise<unknown>): Promise<{ ms: number; stall: number }> {
  let last = performance.now();
  let stall = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  const ms = await timed(fn);
  clearInterval(timer);
  return { ms, stall };
}

console.log("| ids listed | refresh ms | longest stall ms | first /v1/models ms | next /v1/models ms (median) | first /readyz ms | next /readyz ms (median) | /v1/models bytes |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const n of sizes) {
  const fake = startFakeUpstream({}, { models: [] });
  const h = await startHarness({
    SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DEFAULT_PRICE: "0.2,0.6", SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "3600",
    SWITCHYARD_UPSTREAM_MODELS_MAX: String(n),
  });
  try {
    await h.server.services.upstreamModels.ready;
    fake.serve(Array.from({ length: n }, (_, i) => ({ id: `model-${i}` })));
    const refresh = await longestStall(() => h.server.services.upstreamModels.refresh());
    let bytes = 0;
    const models = () => fetch(h.base + "/v1/models").then(async (r) => (bytes = (await r.arrayBuffer()).byteLength));
    const ready = () => fetch(h.base + "/readyz").then((r) => r.arrayBuffer());
    const firstModels = await timed(models);
    const firstReady = await timed(ready);
    const nextModels: number[] = [];
    const nextReady: number[] = [];
    for (let i = 0; i < REPEAT; i++) {
      nextModels.push(await timed(models));
      nextReady.push(await timed(ready));
    }
    const f = (x: number) => x.toFixed(1);
    console.log(`| ${n} | ${f(refresh.ms)} | ${f(refresh.stall)} | ${f(firstModels)} | ${f(median(nextModels))} | ${f(firstReady)} | ${f(median(nextReady))} | ${bytes} |`);
  } finally {
    await h.stop();
    fake.stop();
  }
}
