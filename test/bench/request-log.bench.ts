/**
 * What the operator dashboard's reports cost on a large SQLite store: the request log's page (no
 * filter; by account, key, model, status; a time range), a CSV export's page, and the overview's
 * sums of charges across accounts (today, 30 days, grouped by model and by account), with and
 * without the indexes of migration 007 (request_log). Median of several runs per query; prints
 * figures, asserts no speed. Run alone: npx bun test/bench/request-log.bench.ts
 *
 *   BENCH_REQUESTS (200000 over 30 days)  BENCH_ACCOUNTS (500)  BENCH_RUNS (7)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/database";
import { SqliteReports } from "../../src/store/sqlite/reports";
import { newRequestId } from "../../src/http/request-context";
import type { RequestLogFilter } from "../../src/generations/request-log";
import { median } from "./lib/load";

const N = Number(process.env.BENCH_REQUESTS ?? 200_000);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 500);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const MODELS = ["glm-4.6", "kimi-k2-instruct", "qwen3-235b-a22b-instruct", "minimax-m2", "llama-4-scout"];
const DAY = 86_400_000;

const dir = mkdtempSync(join(tmpdir(), "switchyard-request-log-bench-"));
const db = openStore(dir);
const now = Date.now();
db.transaction(() => {
  const acct = db.query("INSERT INTO accounts (id, name, balance, created_at) VALUES (?, ?, 0, 0)");
  for (let a = 0; a < ACCOUNTS; a++) acct.run(`acct_${a}`, `account ${a}`);
  const out = db.query(`INSERT INTO request_outcomes (request_id, account_id, key_id, endpoint, model, http_status, outcome, streamed, duration_ms, engine_ms)
    VALUES (?, ?, ?, '/v1/chat/completions', ?, ?, 'completed', 0, 20, 15)`);
  const charge = db.query(`INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, input_tokens, output_tokens, created_at)
    VALUES (?, 'charge', ?, 0, ?, '/v1/chat/completions', ?, 100, 50, ?)`);
  for (let i = 0; i < N; i++) {
    const at = now - 30 * DAY + Math.floor((i / N) * 30 * DAY);
    const id = newRequestId(at);
    const a = (i * 7919) % ACCOUNTS;
    const model = MODELS[i % MODELS.length]!;
    const status = i % 50 === 0 ? 429 : 200;
    out.run(id, `acct_${a}`, `key_${a}`, model, status);
    if (status === 200) charge.run(`acct_${a}`, -(1000 + (i % 997)), id, model, Math.floor(at / 1000));
  }
})();

const reports = new SqliteReports(db);
async function time(fn: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

const page = (f: Partial<RequestLogFilter>) => () => reports.requestLog({ limit: 50, ...f });
const secs = (ms: number) => Math.floor(ms / 1000);
const today = Math.floor(now / DAY) * DAY;
const cases: [string, () => Promise<unknown>][] = [
  ["log page, no filter", page({})],
  ["log page, one account", page({ accountId: "acct_7" })],
  ["log page, one key", page({ keyId: "key_7" })],
  ["log page, one model", page({ model: "minimax-m2" })],
  ["log page, status 429", page({ status: 429 })],
  ["log page, last 24 h of one account", page({ accountId: "acct_7", fromMs: now - DAY })],
  ["CSV page (1000 rows), one model", page({ model: "glm-4.6", limit: 1000 })],
  ["revenue today", () => reports.chargedIn(secs(today), secs(today + DAY))],
  ["revenue 30 days", () => reports.chargedIn(secs(today - 29 * DAY), secs(today + DAY))],
  ["top models, 7 days", () => reports.chargedBy("model", secs(today - 6 * DAY), secs(today + DAY), 10)],
  ["spend per account, 30 days", () => reports.chargedBy("account", secs(today - 29 * DAY), secs(today + DAY), null)],
];

// One pass first, so neither column pays for a cold page cache.
for (const [, fn] of cases) await fn();
const withIndexes: number[] = [];
for (const [, fn] of cases) withIndexes.push(await time(fn));
for (const ix of ["request_outcomes_account", "request_outcomes_key", "ledger_charges_time"]) db.run(`DROP INDEX ${ix}`);
const without: number[] = [];
for (const [, fn] of cases) without.push(await time(fn));
db.close();
rmSync(dir, { recursive: true, force: true });

console.log(`\n## operator reports on SQLite (${new Date().toISOString()})`);
console.log(`${N} requests over 30 days, ${ACCOUNTS} accounts, ${MODELS.length} models; median of ${RUNS} runs, ms\n`);
console.log("| query | with the indexes | without |");
console.log("|---|---:|---:|");
cases.forEach(([name], i) => console.log(`| ${name} | ${withIndexes[i]!.toFixed(2)} | ${without[i]!.toFixed(2)} |`));
