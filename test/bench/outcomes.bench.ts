/**
 * What recording request outcomes (for generation records: status, latency) costs per request:
 * record() runs on the request's way out (an array push), flush() once a second writes the batch
 * in one transaction without an fsync. Both are timed per request, best of several rounds (the
 * machine is shared; the best round is the cost, the others are noise).
 * Run alone: ./node_modules/.bin/bun test/bench/outcomes.bench.ts
 *
 *   BENCH_OUTCOMES (10000 per round)  BENCH_ROUNDS (10)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/database";
import { RequestOutcomes } from "../../src/generations/outcomes";
import { newRequestId } from "../../src/http/request-context";

const N = Number(process.env.BENCH_OUTCOMES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);

const dir = mkdtempSync(join(tmpdir(), "switchyard-outcomes-bench-"));
const db = openStore(dir);
const outcomes = new RequestOutcomes(db, (m) => console.error(m), { flushMs: 3_600_000, maxPending: N * 2, retentionMs: 365 * 86_400_000 });
let record = Infinity;
let flush = Infinity;
let t = Date.now();
for (let round = 0; round < ROUNDS; round++) {
  const ids = Array.from({ length: N }, () => newRequestId(t++));
  const t0 = performance.now();
  for (const id of ids) {
    outcomes.record({ requestId: id, accountId: "acct_bench", endpoint: "/v1/chat/completions", model: "glm-4.6", httpStatus: 200, outcome: "sent", streamed: false, durationMs: 12.3, engineMs: 4.5 });
  }
  const t1 = performance.now();
  outcomes.flush();
  const t2 = performance.now();
  record = Math.min(record, ((t1 - t0) * 1000) / N);
  flush = Math.min(flush, ((t2 - t1) * 1000) / N);
}
const rows = (db.query("SELECT COUNT(*) AS n FROM request_outcomes").get() as { n: number }).n;
outcomes.close();
db.close();
rmSync(dir, { recursive: true, force: true });

console.log(`\n## request outcomes (${new Date().toISOString()})`);
console.log(`${ROUNDS} rounds of ${N} requests; best round per step; ${rows} rows written\n`);
console.log("| step | µs per request |");
console.log("|---|---:|");
console.log(`| record() on the request's way out | ${record.toFixed(2)} |`);
console.log(`| flush() (once a second, one transaction, no fsync) | ${flush.toFixed(2)} |`);
console.log(`| total | ${(record + flush).toFixed(2)} |`);
if (rows !== N * ROUNDS) process.exit(1);
