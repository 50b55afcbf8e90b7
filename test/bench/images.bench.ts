/**
 * Image decoding under a flood (issue 20.5): one account queues BENCH_FLOOD large PNG decodes, a
 * second account then asks for one. Prints, for the fair decode queue (src/images/decode-queue.ts)
 * and for the old way (every decode at once, nothing queued): how long the second account's image
 * waited, and at which place it finished; the decode time per image; how many of the flood's
 * decodes the default per-account budget (30,000 ms a minute) lets through before 429.
 * Run alone: ./node_modules/.bin/bun test/bench/images.bench.ts
 *
 *   BENCH_FLOOD (24)  BENCH_EDGE (2000: the flood's images are EDGE x EDGE noise PNGs)
 */
import { DecodeQueue } from "../../src/images/decode-queue";
import { normaliseImage } from "../../src/images/normalise";
import { loadSharp } from "../../src/images/sharp";
import { DomainError } from "../../src/errors";

const FLOOD = Number(process.env.BENCH_FLOOD ?? 24);
const EDGE = Number(process.env.BENCH_EDGE ?? 2000);
const sharp = loadSharp();
const limits = { maxBytes: 64 * 1024 * 1024, maxPixels: 50_000_000, maxEdge: 2048 };

const big = await sharp({ create: { width: EDGE, height: EDGE, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } } }).png().toBuffer();
const small = await sharp({ create: { width: 640, height: 480, channels: 3, background: "#3366cc" } }).png().toBuffer();

async function round(label: string, run: (account: string, bytes: Buffer) => Promise<unknown>) {
  const finished: string[] = [];
  const t0 = performance.now();
  const flood = Array.from({ length: FLOOD }, (_, i) => run("acct_flood", big).then(() => finished.push(`flood${i}`)));
  const tB = performance.now();
  const other = run("acct_other", small).then(() => {
    finished.push("other");
    return performance.now() - tB;
  });
  const waited = await other;
  await Promise.all(flood);
  const total = performance.now() - t0;
  console.log(`${label.padEnd(26)} other account's image: ${waited.toFixed(0).padStart(6)} ms, finished ${finished.indexOf("other") + 1} of ${FLOOD + 1}; flood done in ${total.toFixed(0)} ms`);
}

console.log(`flood: ${FLOOD} noise PNGs of ${EDGE}x${EDGE} (${(big.byteLength / 1e6).toFixed(1)} MB each); other: one 640x480 PNG`);
const t = performance.now();
await normaliseImage(big, limits);
const one = performance.now() - t;
console.log(`one flood image decoded and normalised: ${one.toFixed(0)} ms (the default budget admits about ${Math.floor(30_000 / one)} such images per account per minute)`);

await round("all at once (before)", (_account, bytes) => normaliseImage(bytes, limits));
const fair = new DecodeQueue(2, 100_000_000);
await round("fair queue, 2 at a time", (account, bytes) => fair.run(account, () => normaliseImage(bytes, limits)));

const budgeted = new DecodeQueue(2, 30_000);
let decoded = 0;
let refused = 0;
await Promise.all(
  Array.from({ length: FLOOD * 4 }, () =>
    budgeted.run("acct_flood", () => normaliseImage(big, limits)).then(
      () => decoded++,
      (e) => {
        if (e instanceof DomainError && e.kind === "rate_limited") refused++;
        else throw e;
      },
    ),
  ),
);
console.log(`default budget (30,000 ms/min): of ${FLOOD * 4} flood decodes queued at once, ${decoded} ran, ${refused} got 429`);
